// A whole session as a document to share: `keel sessions export` and the TUI's `/export` write it. It is the
// transcript fold (`@keel/door/transcript`, what every door shows), cut into turns, with the standing plan as it
// stood at each turn's end, each call's permission decision, and each subagent's own session nested under its
// `task` call. Markdown for a PR or a note; HTML as one self-contained file (inline style, a CSP that allows no
// network), every log-borne string escaped the way the web page shows it: controls made visible, then HTML-escaped.
import type { SessionEvent, SessionHeader } from '@keel/session'
import { escapeControls, escapeLine } from '@keel/session/text'
import { costLabel, sessionCost } from '@keel/session/cost'
import { describeDecision } from '@keel/permissions/decisions'
import { GLYPHS, openTasksNotice, planHeader, planMarkdown, type TodoItem } from '@keel/todo'
import { emptyTranscript, foldEvent, type ToolEntry, type TranscriptEntry } from './transcript.ts'
import { imageLabel } from '@keel/session/image'
import {
  CANCELLED,
  compactionWords,
  hookWords,
  planDroppedWords,
  planEditWords,
  proposalWords,
  rewindWords,
  STEERED,
  turnEndWords,
} from './words.ts'

export type ExportFormat = 'markdown' | 'html'

export interface ExportSource {
  header: SessionHeader
  events: readonly SessionEvent[]
}

export interface ExportOptions {
  /** A subagent's own session, or undefined when it cannot be read (the export says so and goes on). */
  child?: (sessionId: string) => ExportSource | undefined
  /** Tool arguments and results longer than this many characters are cut, with a note. */
  cut?: number
}

/** Past this a tool's arguments or result are cut: a transcript to read, not a copy of every file the agent read. */
export const EXPORT_CUT = 2000
/** Subagents nest; a log that names itself (hand-edited) must not recurse forever. */
const MAX_DEPTH = 4

/** One turn of the document: what it showed, then the plan as it stood when it ended (null: no plan stood). */
interface Turn {
  turn: number
  entries: TranscriptEntry[]
  plan: TodoItem[] | null
  ended: boolean
}

interface Doc {
  header: SessionHeader
  model?: string
  cost?: string
  turns: Turn[]
  /** Subagent session id → its document, or a reason it is missing. */
  children: Map<string, Doc | string>
}

function build(source: ExportSource, options: ExportOptions, seen: Set<string>): Doc {
  const state = emptyTranscript()
  const marks: { at: number; turn: number; plan: TodoItem[] | null; ended: boolean }[] = []
  let turn = 0
  let start = 0
  let model: string | undefined
  // Whatever lands between two turns (a `!command`, a rewind) goes with the turn after it.
  for (const event of source.events) {
    foldEvent(state, event)
    if (event.type === 'session/model' && typeof event.data.spec === 'string') model = event.data.spec
    if (event.type === 'turn/start') turn = typeof event.data.turn === 'number' ? event.data.turn : turn + 1
    if (event.type === 'turn/end') {
      marks.push({ at: state.entries.length, turn, plan: state.plan ? [...state.plan] : null, ended: true })
      start = state.entries.length
    }
  }
  if (state.entries.length > start || !marks.length)
    marks.push({ at: state.entries.length, turn, plan: state.plan ? [...state.plan] : null, ended: false })
  const turns: Turn[] = []
  let from = 0
  for (const mark of marks) {
    turns.push({ turn: mark.turn, entries: state.entries.slice(from, mark.at), plan: mark.plan, ended: mark.ended })
    from = mark.at
  }
  const children = new Map<string, Doc | string>()
  const next = new Set(seen).add(source.header.id)
  for (const entry of state.entries) {
    const id = entry.kind === 'tool' ? entry.run?.sessionId : undefined
    if (!id || children.has(id)) continue
    if (next.has(id) || next.size >= MAX_DEPTH) {
      children.set(id, 'not shown: nested too deep')
      continue
    }
    const child = options.child?.(id)
    children.set(id, child ? build(child, options, next) : 'its session log could not be read')
  }
  // A free run (a scripted model) says nothing, as in `keel sessions list`.
  const cost = costLabel(sessionCost(source.events).total)
  return {
    header: source.header,
    ...(model ? { model } : {}),
    ...(cost ? { cost } : {}),
    turns,
    children,
  }
}

/** The text cut to `limit`, and the note that says how much was left out. */
export function cutText(text: string, limit: number): { text: string; note?: string } {
  if (text.length <= limit) return { text }
  return { text: text.slice(0, limit), note: `cut: ${text.length - limit} of ${text.length} characters not shown` }
}

function stamp(ms: number): string {
  const date = new Date(ms)
  return Number.isNaN(date.getTime()) ? 'unknown time' : `${date.toISOString().replace('T', ' ').slice(0, 16)} UTC`
}

function titleOf(doc: Doc): string {
  for (const turn of doc.turns)
    for (const entry of turn.entries) if (entry.kind === 'user' && entry.text.trim()) return entry.text
  return '(no prompt)'
}

function statusWord(entry: ToolEntry): string {
  if (entry.status === 'running') return 'no result (the turn stopped first)'
  if (entry.status === 'cancelled') return CANCELLED
  if (entry.status === 'error') return `failed${entry.failure ? ` (${entry.failure})` : ''}`
  return 'result'
}

// ---------------------------------------------------------------------------------------------------------------
// Markdown

/** A fence longer than any run of backticks in the text, so the text cannot close it. */
function fenced(text: string, info = ''): string {
  const longest = Math.max(2, ...[...text.matchAll(/`+/g)].map((match) => match[0].length))
  const fence = '`'.repeat(longest + 1)
  return `${fence}${info}\n${escapeControls(text)}\n${fence}`
}

/** What the person typed, in a Markdown quote: shown as typed, never taken as HTML or emphasis by a renderer. */
function quoted(text: string, plain = true): string {
  return (plain ? mdPlain(text) : escapeControls(text))
    .split('\n')
    .map((line) => (line ? `> ${line}` : '>'))
    .join('\n')
}

/** Text that is not Markdown (a prompt, a title, a description): its Markdown and HTML characters backslashed. */
function mdPlain(text: string): string {
  return escapeControls(text).replace(/([\\`*_[\]<>#|])/g, '\\$1')
}

function markdownDoc(doc: Doc, cut: number, depth: number): string {
  const out: string[] = []
  const h = (level: number) => '#'.repeat(Math.min(6, level + depth))
  if (depth === 0) {
    out.push(`${h(1)} ${mdPlain(escapeLine(titleOf(doc)).slice(0, 100))}`, '')
    out.push(`- session \`${escapeLine(doc.header.id)}\``)
    out.push(`- folder \`${escapeLine(doc.header.cwd)}\``)
    out.push(`- started ${stamp(doc.header.createdAt)}`)
    if (doc.model) out.push(`- model \`${escapeLine(doc.model)}\``)
    if (doc.cost) out.push(`- cost ${doc.cost}`)
    out.push('')
  }
  for (const turn of doc.turns) {
    if (turn.turn || turn.entries.length) out.push(`${h(2)} Turn ${turn.turn}`, '')
    for (const entry of turn.entries) out.push(...markdownEntry(entry, doc, cut, depth), '')
    if (turn.ended && turn.plan?.length)
      out.push(`**${planHeader(turn.plan)}** at the end of turn ${turn.turn}`, '', planMarkdown(turn.plan), '')
  }
  return out.join('\n').replace(/\n{3,}/g, '\n\n')
}

function markdownEntry(entry: TranscriptEntry, doc: Doc, cut: number, depth: number): string[] {
  switch (entry.kind) {
    case 'user':
      return [
        entry.steer ? `**You** (${STEERED}):` : '**You:**',
        '',
        quoted(entry.text),
        ...(entry.images ?? []).map((image) => `_${escapeLine(imageLabel(image))}_`),
      ]
    case 'context':
      return [`_${escapeLine(entry.source)} context:_`, '', quoted(cutText(entry.text, cut).text)]
    case 'shell': {
      const output = cutText(entry.output, cut)
      return [`**You ran** \`! ${escapeLine(entry.command)}\``, '', fenced(output.text), ...note(output.note)]
    }
    case 'assistant': {
      const lines: string[] = []
      if (entry.reasoning)
        lines.push('<details><summary>thinking</summary>', '', quoted(entry.reasoning), '', '</details>', '')
      if (entry.text) lines.push(escapeControls(entry.text))
      return lines
    }
    case 'tool': {
      const args = cutText(entry.arguments, cut)
      const output = cutText(entry.output, cut)
      const lines = [`**Tool \`${escapeLine(entry.name)}\`**`, '', fenced(args.text, 'json'), ...note(args.note)]
      if (entry.asked !== undefined) lines.push('', `Asked: ${escapeLine(entry.asked)}`)
      if (entry.decision) lines.push('', `Permission: ${escapeLine(describeDecision(entry.decision))}`)
      for (const run of entry.hooks ?? []) {
        const words = hookWords(run)
        if (words) lines.push('', `_Hook: ${escapeLine(words.text)}_`)
      }
      lines.push('', `_${statusWord(entry)}:_`, '', fenced(output.text), ...note(output.note))
      if (entry.run) {
        const child = doc.children.get(entry.run.sessionId)
        lines.push(
          '',
          `${'#'.repeat(Math.min(6, 3 + depth))} Subagent: ${mdPlain(escapeLine(entry.run.description))} (${entry.run.status})`,
          '',
        )
        lines.push(
          typeof child === 'object'
            ? quoted(markdownDoc(child, cut, depth + 1), false)
            : `_Session \`${escapeLine(entry.run.sessionId)}\`: ${child ?? 'not read'}._`,
        )
      }
      return lines
    }
    case 'turn-end':
      return [`_Turn ${entry.turn}: ${escapeLine(turnEndWords(entry.reason, entry.message)?.text ?? '')}._`]
    case 'plan-open':
      return [`_${escapeLine(openTasksNotice(entry.open).text)}_`]
    case 'compaction':
      return [`_${escapeLine(compactionWords(entry).text)}._`]
    case 'rewind':
      return [`_${escapeLine(rewindWords(entry).text)}._`]
    case 'hook': {
      const words = hookWords(entry.run)
      return words ? [`_Hook: ${escapeLine(words.text)}_`] : []
    }
    case 'proposal':
      return [
        `**${escapeLine(proposalWords(entry).text)}**`,
        '',
        quoted(cutText(entry.plan, cut).text),
        '',
        planMarkdown(entry.todos),
      ]
    case 'plan-edit':
      return [`_${escapeLine(planEditWords(entry.change).text)}._`]
    case 'plan-dropped':
      return [`_${escapeLine(planDroppedWords(entry.items).text)}._`]
  }
}

function note(text?: string): string[] {
  return text ? ['', `_(${text})_`] : []
}

// ---------------------------------------------------------------------------------------------------------------
// HTML

const HTML_ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' }

/** Log text for a page: controls made visible as the web UI shows them, then HTML-escaped. */
export function htmlText(text: string): string {
  return escapeControls(text).replace(/[&<>"']/g, (char) => HTML_ESCAPES[char]!)
}
const htmlLine = (text: string) => htmlText(escapeLine(text))

const STYLE = `
body{font:15px/1.5 system-ui,sans-serif;max-width:60rem;margin:2rem auto;padding:0 1rem;color:#1d232a;background:#fdfdfc}
h1{font-size:1.4rem}h2{font-size:1.1rem;border-top:1px solid #d8dde3;padding-top:1rem;margin-top:2rem}
dl.meta{display:grid;grid-template-columns:max-content 1fr;gap:.1rem 1rem;color:#4b5563}dl.meta dd{margin:0}
.user{background:#eef4fb;border-left:3px solid #3b82f6;padding:.5rem .8rem;white-space:pre-wrap}
.user .steered{display:block;font-size:.75rem;color:#6b7280}
.assistant{white-space:pre-wrap}.context{color:#6b7280;white-space:pre-wrap;font-size:.9rem}
.tool{border:1px solid #d8dde3;border-radius:6px;margin:.6rem 0;padding:.4rem .7rem}
.tool .name{font-family:ui-monospace,monospace;font-weight:600}.tool.error{border-color:#ef4444}
pre{background:#f3f4f6;padding:.5rem;overflow:auto;max-height:16rem;white-space:pre-wrap;word-break:break-word;font-size:.85rem}
.note,.decision,.asked,.status{font-size:.85rem;color:#4b5563}.decision.deny{color:#b91c1c}
.subagent{margin:.5rem 0 .2rem 1rem;padding-left:.8rem;border-left:3px solid #a78bfa}
.plan{background:#f7f7ee;border:1px solid #e5e2c6;border-radius:6px;padding:.4rem .8rem;margin:1rem 0}
.plan ul{list-style:none;padding-left:.2rem;margin:.3rem 0}.notice{color:#92400e}
details summary{cursor:pointer;color:#6b7280}
`

function htmlDoc(doc: Doc, cut: number, depth: number): string {
  const out: string[] = []
  for (const turn of doc.turns) {
    if (turn.turn || turn.entries.length) out.push(depth ? `<h4>Turn ${turn.turn}</h4>` : `<h2>Turn ${turn.turn}</h2>`)
    for (const entry of turn.entries) out.push(htmlEntry(entry, doc, cut, depth))
    if (turn.ended && turn.plan?.length) {
      const items = turn.plan.map((todo) => `<li>${GLYPHS[todo.status]} ${htmlLine(todo.content)}</li>`).join('')
      out.push(
        `<div class="plan"><strong>${htmlText(planHeader(turn.plan))}</strong> at the end of turn ${turn.turn}<ul>${items}</ul></div>`,
      )
    }
  }
  return out.join('\n')
}

function pre(text: string, limit: number): string {
  const part = cutText(text, limit)
  return `<pre>${htmlText(part.text)}</pre>${part.note ? `<div class="note">(${htmlText(part.note)})</div>` : ''}`
}

function htmlEntry(entry: TranscriptEntry, doc: Doc, cut: number, depth: number): string {
  switch (entry.kind) {
    case 'user':
      return `<div class="user">${entry.steer ? `<span class="steered">${STEERED}</span>` : ''}${htmlText(entry.text)}${(
        entry.images ?? []
      )
        .map((image) => `<span class="note">${htmlLine(imageLabel(image))}</span>`)
        .join('')}</div>`
    case 'context':
      return `<details class="context"><summary>${htmlLine(entry.source)} context</summary>${pre(entry.text, cut)}</details>`
    case 'shell':
      return `<div class="tool"><span class="name">! ${htmlLine(entry.command)}</span>${pre(entry.output, cut)}</div>`
    case 'assistant':
      return [
        entry.reasoning
          ? `<details class="context"><summary>thinking</summary>${pre(entry.reasoning, cut)}</details>`
          : '',
        entry.text ? `<div class="assistant">${htmlText(entry.text)}</div>` : '',
      ].join('')
    case 'tool': {
      const parts = [`<div class="tool ${entry.status}"><span class="name">${htmlLine(entry.name)}</span>`]
      parts.push(pre(entry.arguments, cut))
      if (entry.asked !== undefined) parts.push(`<div class="asked">Asked: ${htmlLine(entry.asked)}</div>`)
      if (entry.decision)
        parts.push(
          `<div class="decision ${entry.decision.decision}">Permission: ${htmlLine(describeDecision(entry.decision))}</div>`,
        )
      for (const run of entry.hooks ?? []) {
        const words = hookWords(run)
        if (words) parts.push(`<div class="note">Hook: ${htmlLine(words.text)}</div>`)
      }
      parts.push(`<div class="status">${htmlText(statusWord(entry))}:</div>`, pre(entry.output, cut))
      if (entry.run) {
        const child = doc.children.get(entry.run.sessionId)
        parts.push(
          `<section class="subagent"><h3>Subagent: ${htmlLine(entry.run.description)} (${entry.run.status})</h3>`,
          typeof child === 'object'
            ? htmlDoc(child, cut, depth + 1)
            : `<p class="note">Session ${htmlLine(entry.run.sessionId)}: ${htmlText(child ?? 'not read')}.</p>`,
          '</section>',
        )
      }
      parts.push('</div>')
      return parts.join('')
    }
    case 'turn-end':
      return `<p class="notice">Turn ${entry.turn}: ${htmlLine(turnEndWords(entry.reason, entry.message)?.text ?? '')}.</p>`
    case 'plan-open':
      return `<p class="notice">${htmlLine(openTasksNotice(entry.open).text)}</p>`
    case 'compaction':
      return `<p class="notice">${htmlLine(compactionWords(entry).text)}.</p>`
    case 'rewind':
      return `<p class="notice">${htmlLine(rewindWords(entry).text)}.</p>`
    case 'hook': {
      const words = hookWords(entry.run)
      return words ? `<p class="note">Hook: ${htmlLine(words.text)}</p>` : ''
    }
    case 'proposal': {
      const items = entry.todos.map((todo) => `<li>${GLYPHS[todo.status]} ${htmlLine(todo.content)}</li>`).join('')
      return `<div class="plan"><strong>${htmlLine(proposalWords(entry).text)}</strong>${pre(entry.plan, cut)}<ul>${items}</ul></div>`
    }
    case 'plan-edit':
      return `<p class="notice">${htmlLine(planEditWords(entry.change).text)}.</p>`
    case 'plan-dropped':
      return `<p class="notice">${htmlLine(planDroppedWords(entry.items).text)}.</p>`
  }
}

function htmlPage(doc: Doc, cut: number): string {
  const title = htmlLine(titleOf(doc)).slice(0, 100)
  const meta = [
    ['session', htmlLine(doc.header.id)],
    ['folder', htmlLine(doc.header.cwd)],
    ['started', stamp(doc.header.createdAt)],
    ...(doc.model ? [['model', htmlLine(doc.model)]] : []),
    ...(doc.cost ? [['cost', htmlText(doc.cost)]] : []),
  ]
    .map(([key, value]) => `<dt>${key}</dt><dd>${value}</dd>`)
    .join('')
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'">
<meta name="viewport" content="width=device-width,initial-scale=1">
<title>${title} · Keel session</title><style>${STYLE}</style></head>
<body><h1>${title}</h1><dl class="meta">${meta}</dl>
${htmlDoc(doc, cut, 0)}
</body></html>
`
}

/** The session as a Markdown or HTML document. */
export function exportSession(source: ExportSource, format: ExportFormat, options: ExportOptions = {}): string {
  const doc = build(source, options, new Set())
  const cut = options.cut ?? EXPORT_CUT
  return format === 'html' ? htmlPage(doc, cut) : `${markdownDoc(doc, cut, 0).trimEnd()}\n`
}

/** Where a session and its subagents are read from: `ctx.sessions`, or anything that reads a log the same way. */
export interface ExportStore {
  read(id: string): ExportSource
}

/** The session `id` exported from the store, each subagent read from its own log (one that cannot be is named). */
export function exportFromStore(store: ExportStore, id: string, format: ExportFormat): string {
  const { header, events } = store.read(id)
  const child = (childId: string): ExportSource | undefined => {
    try {
      const read = store.read(childId)
      return { header: read.header, events: read.events }
    } catch {
      return undefined
    }
  }
  return exportSession({ header, events }, format, { child })
}
