// The words every door says for the same thing, written once (the `@keel/door/words` entry, browser-safe: it
// imports nothing). A door styles them (a glyph, a colour, a capital and a full stop on the web page); it never
// words them again. Text here is raw: a door escapes what came from the log (an error message) on its way out.
import type { TurnEndReason } from '@keel/session'

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

/** A line as a sentence of its own (the web page's style): a capital first letter and a full stop if it has none. */
export function sentence(text: string): string {
  const capital = text.charAt(0).toUpperCase() + text.slice(1)
  return /[.!?"')]$/.test(capital) ? capital : `${capital}.`
}

/** What a steering message says where it landed: sent while the turn ran, delivered before its next request. */
export const STEERED = 'sent while the agent worked'

/** Where a queued prompt goes (the agent's PromptQueue): `steer` after the running tool calls, or as the next turn. */
export function queuedLabel(kind: 'steer' | 'follow-up'): string {
  return kind === 'steer' ? 'after the running tool calls' : 'as the next turn'
}

/** What a cancelled turn says of the prompts still queued: they are kept, and go with the next prompt. */
export function queueKeptWords(count: number): Words {
  const text =
    count === 1
      ? '1 queued message is kept: it goes with your next prompt'
      : `${count} queued messages are kept: they go with your next prompt`
  return { text, tone: 'info' }
}
