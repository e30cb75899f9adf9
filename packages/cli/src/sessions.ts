import { imageLabel } from '@keel/session/image'
import type { Context } from 'cordis'
import { foldEvents, type TranscriptEntry } from '@keel/door/transcript'
import {
  CANCELLED,
  compactionWords,
  hookWords,
  planDroppedWords,
  planEditWords,
  proposalWords,
  rewindWords,
  turnEndWords,
} from '@keel/door/words'
import { escapeLine, failureLabel, terminalJson } from '@keel/session'
import { rowColumns, type SessionRow, sessionRows } from '@keel/door/session-rows'
import { openTasksNotice, planHeader, planLines, planMarkdown, storedPlanOf, type TodoItem } from '@keel/todo'
import { describeDecision } from '@keel/permissions'
import type {} from '@keel/subagent' // the subagent/end event
import { costBreakdown, costText, costUsd, sessionCost } from '@keel/session/cost'
import type { Flags } from './args.ts'
import { workingDirectory } from './args.ts'

// Every field below comes from a log file, which anyone (or any model) may have shaped: each one is escaped on its
// way to the terminal, numbers included (a hand-written file can hold a string where a number belongs).
const safe = (value: unknown): string => escapeLine(String(value))

/** A log's time as `YYYY-MM-DD HH:MM` (UTC), or question marks for a time a hand-edited file made unreadable. */
export function when(ms: number): string {
  const date = new Date(ms)
  return Number.isNaN(date.getTime()) ? '????-??-?? ??:??' : date.toISOString().replace('T', ' ').slice(0, 16)
}

/** `keel sessions list`: top-level sessions newest first, each followed by its children; unreadable entries last. */
export async function listSessions(ctx: Context, flags: Flags): Promise<string> {
  const rows = await sessionRows(ctx, flags.all ? undefined : workingDirectory(flags), { children: true })
  if (flags.json)
    return terminalJson(
      rows.map(({ summary, ...row }) => ({ ...(summary ?? {}), ...row })),
      2,
    )
  if (!rows.length)
    return flags.all ? 'No sessions yet.' : `No sessions in ${safe(workingDirectory(flags))} (try --all).`
  // Subagents under their parent, forks under the session they branched from.
  const children = new Map<string, SessionRow[]>()
  const originOf = (row: SessionRow) => row.summary?.parent?.sessionId ?? row.summary?.forkedFrom?.sessionId
  for (const row of rows) {
    const origin = originOf(row)
    if (!origin) continue
    const list = children.get(origin) ?? []
    list.push(row)
    children.set(origin, list)
  }
  const lines: string[] = []
  const known = new Set(rows.map((row) => row.id))
  const line = (row: SessionRow, indent: string) =>
    row.unreadable
      ? `${indent}${safe(row.id)}  ${rowColumns(row)}`
      : `${indent}${safe(row.id)}  ${when(row.updatedAt)}  ${rowColumns(row)}  ${escapeLine(row.title || '(no prompt)')}${flags.all && !indent ? `  ${safe(row.cwd)}` : ''}`
  const walk = (row: SessionRow, indent: string) => {
    lines.push(line(row, indent))
    for (const child of children.get(row.id) ?? []) walk(child, indent + (child.summary?.forkedFrom ? '  ⑂ ' : '  └ '))
  }
  for (const row of rows) {
    const origin = originOf(row)
    if (origin && known.has(origin)) continue
    if (row.summary?.parent && !flags.all) continue
    walk(row, '')
  }
  return lines.join('\n')
}

/** `keel sessions show <id>`: a readable transcript and the standing plan (computed from the log's tail). */
export function showSession(ctx: Context, flags: Flags, id: string): string {
  const { header, events, path } = ctx.sessions.read(id)
  const todos = path ? storedPlanOf(ctx.sessions, id).todos : null
  if (flags.markdown) return todos ? planMarkdown(todos) : '_No plan stands in this session._'
  const cost = sessionCost(events)
  if (flags.json)
    return terminalJson(
      { header, path, events: events.length, todos, costUsd: cost.total.requests ? costUsd(cost.total) : null },
      2,
    )
  const lines = [`Session ${safe(header.id)}`, `  cwd      ${safe(header.cwd)}`, `  created  ${when(header.createdAt)}`]
  if (header.parent) lines.push(`  parent   ${safe(header.parent.sessionId)} (call ${safe(header.parent.callId)})`)
  if (header.forkedFrom)
    lines.push(`  forked   from ${safe(header.forkedFrom.sessionId)} at seq ${safe(header.forkedFrom.seq)}`)
  lines.push(`  events   ${events.length}`)
  if (cost.total.requests) lines.push(`  cost     ${costText(cost.total)} (${costBreakdown(cost)})`)
  lines.push('')
  for (const entry of foldEvents(events).entries) lines.push(...describe(entry))
  lines.push('')
  if (todos) lines.push(planHeader(todos), ...planLines(todos as TodoItem[]).map((l) => `  ${l}`))
  else lines.push('No plan stands.')
  return lines.join('\n')
}

/** One transcript entry (the fold every door shows) as lines of text; every log-borne field escaped. */
function describe(entry: TranscriptEntry): string[] {
  switch (entry.kind) {
    case 'user':
      return [
        `> ${escapeLine(entry.text).slice(0, 300)}`,
        ...(entry.images ?? []).map((image) => `  ${escapeLine(imageLabel(image))}`),
      ]
    case 'shell':
      return [`! ${escapeLine(entry.command).slice(0, 300)}`]
    case 'context':
      return []
    case 'assistant':
      return entry.text ? [escapeLine(entry.text).slice(0, 300)] : []
    case 'tool': {
      const lines = [`  → ${safe(entry.name).slice(0, 80)} ${safe(entry.arguments).slice(0, 160)}`]
      if (entry.asked !== undefined) lines.push(`    ? asked: ${escapeLine(entry.asked).slice(0, 200)}`)
      if (entry.decision) lines.push(`    ${escapeLine(describeDecision(entry.decision))}`)
      for (const run of entry.hooks ?? []) {
        const words = hookWords(run)
        if (words) lines.push(`    ↳ ${escapeLine(words.text).slice(0, 200)}`)
      }
      if (entry.status === 'error') {
        const how = failureLabel(entry.details)
        const text = escapeLine(entry.output)
        lines.push(`    ✗ ${how ? `${escapeLine(how)}: ${text.slice(-200)}` : text.slice(0, 200)}`)
      } else if (entry.status === 'cancelled') lines.push(`    ⏹ ${CANCELLED}`)
      return lines
    }
    case 'turn-end':
      return [`── turn ${entry.turn}: ${escapeLine(turnEndWords(entry.reason, entry.message)?.text ?? '')}`]
    case 'plan-open':
      return [`  ◌ ${openTasksNotice(entry.open).text}`]
    case 'compaction':
      return [`── ${escapeLine(compactionWords(entry).text)}`]
    case 'rewind':
      return [`── ${escapeLine(rewindWords(entry).text)}`]
    case 'hook': {
      const words = hookWords(entry.run)
      return words ? [`  ↳ ${escapeLine(words.text).slice(0, 200)}`] : []
    }
    case 'proposal':
      return [
        `  ◇ ${escapeLine(proposalWords(entry).text)}`,
        ...entry.plan
          .split('\n')
          .slice(0, 40)
          .map((line) => `    ${escapeLine(line)}`),
        ...planLines(entry.todos).map((line) => `    ${line}`),
      ]
    case 'plan-edit':
      return [`  ✎ ${escapeLine(planEditWords(entry.change).text)}`]
    case 'plan-dropped':
      return [`  ! ${escapeLine(planDroppedWords(entry.items).text)}`]
  }
}
