import type { Context } from 'cordis'
import { escapeLine, textOf, type SessionEvent, type SessionSummary } from '@keel/session'
import { planHeader, planLines, planMarkdown, standingPlanFromFile, type TodoItem } from '@keel/todo'
import { describeDecision } from '@keel/permissions'
import type { Flags } from './args.ts'
import { workingDirectory } from './agent.ts'

function when(ms: number): string {
  return new Date(ms).toISOString().replace('T', ' ').slice(0, 16)
}

/** `keel sessions list`: top-level sessions newest first, each followed by its children. */
export function listSessions(ctx: Context, flags: Flags): string {
  const all = ctx.sessions.list(flags.all ? undefined : workingDirectory(flags))
  if (flags.json) return JSON.stringify(all, null, 2)
  if (!all.length) return flags.all ? 'No sessions yet.' : `No sessions in ${workingDirectory(flags)} (try --all).`
  const children = new Map<string, SessionSummary[]>()
  for (const summary of all) {
    if (!summary.parent) continue
    const list = children.get(summary.parent.sessionId) ?? []
    list.push(summary)
    children.set(summary.parent.sessionId, list)
  }
  const lines: string[] = []
  const known = new Set(all.map((summary) => summary.id))
  const line = (summary: SessionSummary, indent: string) => `${indent}${summary.id}  ${when(summary.updatedAt)}  ${escapeLine(summary.title || '(no prompt)').slice(0, 70)}${flags.all && !indent ? `  ${summary.cwd}` : ''}`
  const walk = (summary: SessionSummary, indent: string) => {
    lines.push(line(summary, indent))
    for (const child of children.get(summary.id) ?? []) walk(child, indent + '  └ ')
  }
  for (const summary of all) {
    if (summary.parent && known.has(summary.parent.sessionId)) continue
    if (summary.parent && !flags.all) continue
    walk(summary, '')
  }
  return lines.join('\n')
}

/** `keel sessions show <id>`: a readable transcript and the standing plan (computed from the file's tail). */
export function showSession(ctx: Context, flags: Flags, id: string): string {
  const { header, events, path } = ctx.sessions.read(id)
  const todos = path ? standingPlanFromFile(path).todos : null
  if (flags.markdown) return todos ? planMarkdown(todos) : '_No plan stands in this session._'
  if (flags.json) return JSON.stringify({ header, path, events: events.length, todos }, null, 2)
  const lines = [`Session ${header.id}`, `  cwd      ${escapeLine(header.cwd)}`, `  created  ${when(header.createdAt)}`]
  if (header.parent) lines.push(`  parent   ${header.parent.sessionId} (call ${header.parent.callId})`)
  lines.push(`  events   ${events.length}`, '')
  for (const event of events) {
    const line = describe(event)
    if (line) lines.push(line)
  }
  lines.push('')
  if (todos) lines.push(planHeader(todos), ...planLines(todos as TodoItem[]).map((l) => `  ${l}`))
  else lines.push('No plan stands.')
  return lines.join('\n')
}

function describe(event: SessionEvent): string | undefined {
  switch (event.type) {
    case 'turn/start': return `── turn ${event.data.turn}`
    case 'turn/end': return `── turn ${event.data.turn} ended: ${event.data.reason}${event.data.message ? ` (${escapeLine(event.data.message)})` : ''}`
    case 'user/message': return `> ${escapeLine(textOf(event.data.message.content)).slice(0, 300)}`
    case 'assistant/message': {
      const text = textOf(event.data.message.content)
      return text ? `${escapeLine(text).slice(0, 300)}` : undefined
    }
    case 'tool/call': return `  → ${event.data.name} ${escapeLine(event.data.arguments).slice(0, 160)}`
    case 'tool/result': return event.data.isError ? `    ✗ ${escapeLine(textOf(event.data.content)).slice(0, 200)}` : undefined
    case 'permission/request': return `    ? asked: ${escapeLine(event.data.summary).slice(0, 200)}`
    case 'permission/decision': return `    ${escapeLine(describeDecision(event.data))}`
    default: return undefined
  }
}
