// What a session list shows of each session, for every door that lists them: `keel sessions list`, the TUI's
// `/resume` picker. Each log is streamed, and only the few line types the row needs are parsed (turns, the model,
// what the requests cost); a log that cannot be read is a row that says so, never a stop or a hang.
import type { Context } from 'cordis'
import { FileBackend, type SessionEvent, type SessionSummary } from '@keel/session'
import { costLabel, costUsd, sessionCost } from '@keel/session/cost'
import { escapeLine } from '@keel/session/text'
import { mapInFlight, streamSessionLines } from './session-lines.ts'

export interface SessionRow {
  id: string
  cwd: string
  updatedAt: number
  /** The first prompt, short enough for a column ('' before any prompt). */
  title: string
  /** The first prompt flattened to one line, up to 120 characters: what a picker shows under the title. */
  firstPrompt: string
  turns: number
  /** The model spec last recorded on the log (`session/model`). */
  model?: string
  /** `$0.42` or `cost unknown`; absent for a free run or one with no requests. */
  cost?: string
  /** The dollars for a JSON report (null: no request had a price); absent with no requests. */
  costUsd?: number | null
  summary?: SessionSummary
  /** Why the log cannot be read; such a row has only its id, cwd and time. */
  unreadable?: string
}

const FILES_IN_FLIGHT = 8
const TITLE = 60
// The row's line types, as the store writes them (`type` is the first key): everything else passes unparsed.
const WANTED = /^\{"type":"(turn\/start|session\/model|assistant\/message|compaction\/end|subagent\/end)"/

async function rowOf(
  summary: SessionSummary,
  signal?: AbortSignal,
  read?: (id: string) => readonly SessionEvent[],
): Promise<SessionRow> {
  let turns = 0
  let model: string | undefined
  const priced: { type: string; data: unknown }[] = []
  // A store that is not the JSONL files (PostgreSQL) hands over the events themselves.
  const fromStore = (): string | undefined => {
    try {
      for (const event of read!(summary.id)) {
        if (!WANTED.test(`{"type":"${event.type}"`)) continue
        const data = event.data as { spec?: unknown; usage?: unknown; cost?: unknown }
        if (event.type === 'turn/start') turns++
        else if (event.type === 'session/model') {
          if (typeof data?.spec === 'string') model = data.spec
        } else if (data?.usage || data?.cost) priced.push({ type: event.type, data })
      }
      return undefined
    } catch (error) {
      return (error as Error).message
    }
  }
  const problem = read
    ? fromStore()
    : await streamSessionLines(
        summary.path,
        {
          line: (line) => {
            const type = WANTED.exec(line)?.[1]
            if (!type) return
            if (type === 'turn/start') {
              turns++
              return
            }
            if (type === 'assistant/message') {
              // The usage and price follow the message (the store writes them in that order); only they are parsed,
              // not the answer's text. A raw `"usage":{` cannot sit inside a JSON string, whose quotes are escaped.
              const at = line.lastIndexOf('"usage":{')
              if (at < 0) return
              const data = parseTail(line.slice(at))
              if (data) priced.push({ type, data })
              return
            }
            let event: { data?: { spec?: unknown; usage?: unknown; cost?: unknown } }
            try {
              event = JSON.parse(line)
            } catch {
              return // a torn last line
            }
            if (type === 'session/model') {
              if (typeof event.data?.spec === 'string') model = event.data.spec
            } else if (event.data?.usage || event.data?.cost) priced.push({ type, data: event.data })
          },
        },
        signal,
      )
  const title = summary.title.length > TITLE ? `${summary.title.slice(0, TITLE - 1)}…` : summary.title
  const base = { id: summary.id, cwd: summary.cwd, updatedAt: summary.updatedAt, summary, title }
  if (problem) return { ...base, firstPrompt: summary.title, turns: 0, unreadable: problem }
  const total = sessionCost(priced).total
  const cost = costLabel(total)
  return {
    ...base,
    firstPrompt: summary.title,
    turns,
    ...(model ? { model } : {}),
    ...(cost ? { cost } : {}),
    ...(total.requests ? { costUsd: costUsd(total) } : {}),
  }
}

/** `"usage":{…},"costUsd":0.1}}…` (the end of an assistant/message line) as `{ usage, costUsd }`, or undefined. */
function parseTail(tail: string): { usage: unknown; costUsd?: unknown } | undefined {
  const end = tail.indexOf('}')
  if (end < 0) return undefined
  try {
    const usage = JSON.parse(tail.slice(8, end + 1))
    const price = /^,"costUsd":(-?[\d.eE+-]+)/.exec(tail.slice(end + 1))
    return { usage, ...(price ? { costUsd: Number(price[1]) } : {}) }
  } catch {
    return undefined
  }
}

/**
 * The rows of `cwd`'s sessions (every folder's when undefined), newest first; entries the store refuses (a FIFO, a
 * link, a bad header) are rows too, marked unreadable, so a list never hides that something is there.
 */
export async function sessionRows(
  ctx: Context,
  cwd: string | undefined,
  options: { children?: boolean; signal?: AbortSignal } = {},
): Promise<SessionRow[]> {
  const skipped: { path: string; problem: string }[] = []
  const dispose = ctx.on('session/skipped', (path, problem) => skipped.push({ path, problem }))
  let summaries: SessionSummary[]
  try {
    summaries = ctx.sessions.list(cwd)
  } finally {
    dispose()
  }
  if (!options.children) summaries = summaries.filter((summary) => !summary.parent)
  const read = ctx.sessions.backend instanceof FileBackend ? undefined : (id: string) => ctx.sessions.read(id).events
  const rows = await mapInFlight(summaries, FILES_IN_FLIGHT, (summary) => rowOf(summary, options.signal, read))
  for (const { path, problem } of skipped) {
    const name = path.slice(path.lastIndexOf('/') + 1).replace(/\.jsonl$/, '')
    // The store's warning says the entry was skipped; here it is listed, with what is wrong with it.
    const unreadable = problem.replace(/; skipped$/, '')
    rows.push({ id: name, cwd: cwd ?? '', updatedAt: 0, title: '', firstPrompt: '', turns: 0, unreadable })
  }
  return rows
}

/**
 * The fuzzy filter of a picker: every character of `query` in order (case-insensitive) somewhere in the row's
 * title, first prompt, model or id. Rows whose match is tighter come first; ties keep their order (recent first).
 */
export function filterRows(rows: readonly SessionRow[], query: string): SessionRow[] {
  const needle = query.trim().toLowerCase()
  if (!needle) return [...rows]
  const scored: { row: SessionRow; score: number; index: number }[] = []
  for (const [index, row] of rows.entries()) {
    const score = fuzzyScore(needle, `${row.firstPrompt} ${row.model ?? ''} ${row.id}`.toLowerCase())
    if (score !== undefined) scored.push({ row, score, index })
  }
  return scored.sort((a, b) => a.score - b.score || a.index - b.index).map((entry) => entry.row)
}

/** How spread out the needle's characters are in the text (lower is tighter); undefined when they are not all there. */
export function fuzzyScore(needle: string, text: string): number | undefined {
  const exact = text.indexOf(needle)
  if (exact >= 0) return exact / 1000
  let at = -1
  let first = -1
  for (const char of needle) {
    at = text.indexOf(char, at + 1)
    if (at < 0) return undefined
    if (first < 0) first = at
  }
  return 1 + (at - first - needle.length)
}

/** A row's columns as every list prints them (the picker, `sessions list`), escaped: turns, model, cost when known. */
export function rowColumns(row: SessionRow): string {
  if (row.unreadable) return `unreadable: ${escapeLine(row.unreadable)}`
  const turns = `${row.turns} turn${row.turns === 1 ? ' ' : 's'}`
  // A long spec (a scripted model's path) keeps its end, which names it.
  const model = row.model && row.model.length > 32 ? `…${row.model.slice(-31)}` : row.model
  return [turns.padStart(9), model ? escapeLine(model) : '', row.cost ? escapeLine(row.cost) : '']
    .filter(Boolean)
    .join('  ')
}
