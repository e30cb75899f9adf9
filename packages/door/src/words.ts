// The words every door says for the same thing, written once (the `@keel/door/words` entry, browser-safe: it
// imports nothing). A door styles them (a glyph, a colour, a capital and a full stop on the web page); it never
// words them again. Text here is raw: a door escapes what came from the log (an error message) on its way out. It
// imports only types and other browser-safe entries.
import type { TurnEndReason } from '@keel/session'
import { describePlanChange, type PlanChange, type ProposalStatus } from '@keel/todo/plan'

/** How loud a notice is: a door picks its colour by it. */
export type Tone = 'info' | 'warn' | 'error'

/** One line for the person, and how loud it is. */
export interface Words {
  text: string
  tone: Tone
}

/** A tool call or a turn that the person (or a shutdown) stopped. */
export const CANCELLED = 'cancelled'

/** What a turn that did not complete says under it; nothing for one that completed. */
export function turnEndWords(reason: TurnEndReason, message?: string): Words | undefined {
  const why = message ? `: ${message}` : ''
  switch (reason) {
    case 'completed':
      return undefined
    case 'aborted':
      return { text: CANCELLED, tone: 'warn' }
    case 'max-tokens':
      return { text: 'the reply hit the output token limit', tone: 'warn' }
    case 'step-limit':
      return { text: 'the turn hit the step limit and stopped', tone: 'warn' }
    case 'interrupted':
      return { text: `the turn was interrupted: Keel stopped before it ended${why}`, tone: 'warn' }
    default:
      return { text: `the turn ended with an error${why}`, tone: 'error' }
  }
}

/** A token count the way every door prints it: `950`, `12.3k`. */
export function tokenCount(count: number): string {
  return count >= 1000 ? `${(count / 1000).toFixed(1)}k` : String(count)
}

/** Where a compaction replaced older messages with a summary, or why it could not. */
export function compactionWords(entry: { before: number; after: number; summarised: number; error?: string }): Words {
  if (entry.error) return { text: `compaction failed: ${entry.error}`, tone: 'warn' }
  return {
    text: `context compacted: ${entry.summarised} messages summarised, ~${tokenCount(entry.before)} → ~${tokenCount(entry.after)} tokens`,
    tone: 'info',
  }
}

/** What a rewind did to the files (and the conversation), as `checkpoint/restore` records it. */
export function rewindWords(restore: {
  toTurn: number
  files: readonly string[]
  fork?: string
  undo?: boolean
}): Words {
  const what = restore.undo
    ? 'files put back (undo of a rewind)'
    : `files rewound to the start of turn ${restore.toTurn}`
  const count = `${restore.files.length} file${restore.files.length === 1 ? '' : 's'}`
  return { text: `${what}: ${count}${restore.fork ? `; conversation forked as ${restore.fork}` : ''}`, tone: 'info' }
}

/**
 * One hook run, as every door says it: `PreToolUse hook denied: rm is not allowed`, `Stop hook timed out after 60 s`.
 * Quiet runs (it went on, no word) say nothing: undefined.
 */
export function hookWords(run: {
  event: string
  command: string
  exit: number | null
  verdict: string
  timedOut?: boolean
  reason?: string
}): Words | undefined {
  const why = run.reason ? `: ${run.reason}` : ''
  const who = `${run.event} hook`
  switch (run.verdict) {
    case 'ok':
      return undefined
    case 'allow':
      return { text: `${who} allowed it${why}`, tone: 'info' }
    case 'ask':
      return { text: `${who} asks${why}`, tone: 'info' }
    case 'deny':
      return { text: `${who} denied it${why}`, tone: 'error' }
    case 'block':
      return { text: `${who} blocked${why}`, tone: 'warn' }
    case 'stop':
      return { text: `${who} stopped the turn${why}`, tone: 'warn' }
    case 'context':
      return { text: `${who} added context`, tone: 'info' }
    default:
      return {
        text: run.timedOut
          ? `${who} ${run.command} timed out${why}`
          : `${who} ${run.command} failed (exit ${run.exit ?? 'killed'})${why}`,
        tone: 'warn',
      }
  }
}

/** A line as a sentence of its own (the web page's style): a capital first letter and a full stop if it has none. */
export function sentence(text: string): string {
  const capital = text.charAt(0).toUpperCase() + text.slice(1)
  return /[.!?"')]$/.test(capital) ? capital : `${capital}.`
}

/** The footer's count of running background jobs (`2 jobs`); nothing when none run. */
export function jobCountWords(count: number): string | undefined {
  return count ? `${count} job${count === 1 ? '' : 's'}` : undefined
}

/** One running job as `/jobs` and the web page list it: `job-1 · 12s · node server.js`. */
export function jobLine(job: { id: string; command: string; startedAt: number }, now: number): string {
  const seconds = Math.max(0, Math.round((now - job.startedAt) / 1000))
  const age =
    seconds < 60 ? `${seconds}s` : seconds < 3600 ? `${Math.floor(seconds / 60)}m` : `${Math.floor(seconds / 3600)}h`
  return `${job.id} · ${age} · ${job.command}`
}

/** `/jobs` with nothing running. */
export const NO_JOBS = 'no background jobs are running'
/** A bare `!`: how to use it. */
export const USER_COMMAND_USAGE = 'Usage: !<command> runs a shell command here; the model sees it and its output.'

/** A `!command` that did not run (a deny rule, the mode, no bash tool), or that failed to start. */
export function userCommandWords(command: string, outcome: { refused: string } | { failed: string }): Words {
  return 'refused' in outcome
    ? { text: `! ${command} was not run: ${outcome.refused}`, tone: 'warn' }
    : { text: `! ${command} failed: ${outcome.failed}`, tone: 'error' }
}

/** The question an untrusted folder gets (the TUI's before it starts, the web page's card), and its two answers. */
export interface TrustOfferWords {
  title: string
  /** What the folder's files ask for. */
  asks: string
  /** What trusting it lets those files do. */
  means: string
  trust: string
  stay: string
}

/** `folder` and the keys its files asked for (`mode`, `mcpServers`, …) as held by @keel/settings' trust gate. */
export function trustOfferWords(folder: string, keys: readonly string[]): TrustOfferWords {
  return {
    title: `This folder is not trusted yet: ${folder}`,
    asks: `Its project files ask for: ${keys.join(', ')}`,
    means: 'Trusting it lets those files widen permissions, change the model server and start MCP commands.',
    trust: 'Trust this folder',
    stay: 'Continue without trusting it (only its deny rules and stricter settings apply)',
  }
}

/**
 * After a yes while Keel runs (the web page): what applies now and what waits for the next start, since the mode,
 * the model and plugin settings were read when it started.
 */
export function trustedWords(folder: string, running: boolean): string {
  return running
    ? `trusted ${folder}: its allow rules, commands and MCP servers apply from now on; its mode, model and plugin settings apply when Keel starts again`
    : `trusted ${folder}`
}

/** The head of a plan proposal's card: waiting for the person, or what they answered. */
export function proposalWords(proposal: {
  status: ProposalStatus
  edited: boolean
  mode?: 'ask' | 'auto'
  message?: string
}): Words {
  switch (proposal.status) {
    case 'pending':
      return { text: `plan proposed${proposal.edited ? ' (edited)' : ''}: approve, edit or reject it`, tone: 'warn' }
    case 'approved':
      return {
        text: `plan approved${proposal.edited ? ' with edits' : ''}, running in ${proposal.mode ?? 'ask'} mode`,
        tone: 'info',
      }
    case 'rejected':
      return { text: `plan rejected: “${proposal.message ?? ''}”`, tone: 'info' }
  }
}

/** The person changed the plan (a door's edit, `keel plan`). */
export function planEditWords(change: PlanChange): Words {
  return { text: `you changed the plan: ${describePlanChange(change)}`, tone: 'info' }
}

/** A model's whole-list write left out items the person added. */
export function planDroppedWords(items: readonly string[]): Words {
  return {
    text: `the model's plan left out your item${items.length === 1 ? '' : 's'} ${items.map((item) => JSON.stringify(item)).join(', ')}`,
    tone: 'warn',
  }
}

/** What a steering message says where it landed: sent while the turn ran, delivered before its next request. */
export const STEERED = 'sent while the agent worked'

/** Where a queued prompt goes (the agent's PromptQueue): `steer` after the running tool calls, or as the next turn. */
export function queuedLabel(kind: 'steer' | 'follow-up'): string {
  return kind === 'steer' ? 'after the running tool calls' : 'as the next turn'
}

/** The control that takes a queued prompt back into the editor, to edit or drop (the web page's button). */
export const TAKE_BACK = 'take back to edit'

/** What a cancelled turn says of the prompts still queued: they are kept, and go with the next prompt. */
export function queueKeptWords(count: number): Words {
  const text =
    count === 1
      ? '1 queued message is kept: it goes with your next prompt'
      : `${count} queued messages are kept: they go with your next prompt`
  return { text, tone: 'info' }
}

/**
 * A rewind of the files asked on another machine than the one that ran the session (a shared session store):
 * checkpoints are git snapshots on that machine. `fork` is how this door rewinds the conversation alone instead.
 */
export function checkpointsElsewhereWords(id: string, ranOn: string, here: string, fork: string): string {
  return `session ${id} ran on ${ranOn}: its checkpoints are there, not on ${here}; rewind its files from ${ranOn}, or ${fork}`
}
