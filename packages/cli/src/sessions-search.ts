// `keel sessions search <text>`: the sessions whose prompts, answers or plan items contain the text. Files are
// streamed line by line, several at a time, with a cheap substring test before any JSON is parsed, so a few
// thousand sessions take about as long as reading them once; there is no index to keep in step with the logs.
import { mapInFlight, streamSessionLines } from '@keel/door/session-lines'
import { escapeLine, type SessionSummary } from '@keel/session'
import { when } from './sessions.ts'

/** Where in a session the text was found. */
type MatchWhere = 'prompt' | 'answer' | 'plan'

interface SessionMatch {
  seq: number
  where: MatchWhere
  /** The matching line of text, cut around the match. */
  snippet: string
}

interface SessionHit {
  summary: SessionSummary
  /** The first few matches, in log order. */
  matches: SessionMatch[]
  /** How many matches the session holds in all. */
  count: number
}

export interface SearchResult {
  hits: SessionHit[]
  /** Sessions that could not be read to the end: listed, never a reason to stop or hang. */
  unreadable: { summary: SessionSummary; problem: string }[]
}

const MATCHES_KEPT = 3
const FILES_IN_FLIGHT = 8
const SNIPPET = 100

/** The text of a session event that a person would search for, with where it came from. */
function textsOf(event: unknown): { where: MatchWhere; text: string }[] {
  if (!event || typeof event !== 'object') return []
  const { type, data } = event as { type?: unknown; data?: Record<string, unknown> }
  if (!data || typeof data !== 'object') return []
  const blocksText = (content: unknown) =>
    Array.isArray(content)
      ? content.map((block) => (block?.type === 'text' && typeof block.text === 'string' ? block.text : '')).join('')
      : ''
  if (type === 'user/message' || type === 'assistant/message') {
    const message = data.message as { content?: unknown; source?: unknown } | undefined
    if (!message) return []
    if (
      type === 'user/message' &&
      message.source !== undefined &&
      message.source !== 'user' &&
      message.source !== 'steer'
    )
      return []
    return [{ where: type === 'user/message' ? 'prompt' : 'answer', text: blocksText(message.content) }]
  }
  if (type === 'todo/write' && Array.isArray(data.todos))
    return data.todos
      .map((todo) => (todo && typeof todo.content === 'string' ? todo.content : ''))
      .filter(Boolean)
      .map((text) => ({ where: 'plan' as const, text }))
  return []
}

function snippetAround(text: string, index: number, length: number): string {
  const start = Math.max(0, index - Math.floor((SNIPPET - length) / 2))
  const flat = text.slice(start, start + SNIPPET).replace(/\s+/g, ' ')
  return `${start > 0 ? '…' : ''}${flat}${start + SNIPPET < text.length ? '…' : ''}`
}

/**
 * Whether the raw JSON line may hold the text. JSON escapes quotes, backslashes and control characters, so only a
 * needle without them can be tested on the raw line; other needles parse every line.
 */
const rawTestable = (needle: string) => !/["\\\p{Cc}]/u.test(needle)

/** Adds what one event holds of the needle to the hit. */
function matchEvent(hit: SessionHit, event: unknown, lower: string, length: number): void {
  for (const { where, text } of textsOf(event)) {
    const index = text.toLowerCase().indexOf(lower)
    if (index < 0) continue
    hit.count++
    if (hit.matches.length < MATCHES_KEPT)
      hit.matches.push({
        seq: Number((event as { seq?: unknown }).seq),
        where,
        snippet: snippetAround(text, index, length),
      })
  }
}

async function searchFile(summary: SessionSummary, needle: string, signal?: AbortSignal): Promise<SessionHit | string> {
  const lower = needle.toLowerCase()
  // A chunk of complete lines that does not hold the needle is passed over whole, unsplit and unparsed.
  const prefilter = rawTestable(needle) ? new RegExp(needle.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&'), 'i') : undefined
  const hit: SessionHit = { summary, matches: [], count: 0 }
  const problem = await streamSessionLines(
    summary.path,
    {
      ...(prefilter ? { chunk: (text: string) => prefilter.test(text) } : {}),
      line: (line) => {
        if (prefilter && !prefilter.test(line)) return
        let event: unknown
        try {
          event = JSON.parse(line)
        } catch {
          return // a torn line: what a resume would drop
        }
        matchEvent(hit, event, lower, needle.length)
      },
    },
    signal,
  )
  return problem ?? hit
}

/** Searches the events of a session a store reads whole (one that is not a file: the PostgreSQL store). */
function searchRead(
  summary: SessionSummary,
  needle: string,
  read: (id: string) => readonly unknown[],
): SessionHit | string {
  const hit: SessionHit = { summary, matches: [], count: 0 }
  try {
    for (const event of read(summary.id)) matchEvent(hit, event, needle.toLowerCase(), needle.length)
  } catch (error) {
    return (error as Error).message
  }
  return hit
}

/**
 * Searches the given sessions (newest first stays newest first), a few files at a time; with `read`, the sessions'
 * events come from the store instead of their files.
 */
export async function searchSessions(
  summaries: readonly SessionSummary[],
  needle: string,
  signal?: AbortSignal,
  read?: (id: string) => readonly unknown[],
): Promise<SearchResult> {
  const outcomes = await mapInFlight(summaries, FILES_IN_FLIGHT, async (summary) =>
    read ? searchRead(summary, needle, read) : searchFile(summary, needle, signal),
  )
  const result: SearchResult = { hits: [], unreadable: [] }
  for (const [index, outcome] of outcomes.entries()) {
    if (typeof outcome === 'string') result.unreadable.push({ summary: summaries[index]!, problem: outcome })
    else if (outcome?.count) result.hits.push(outcome)
  }
  return result
}

/** The terminal listing: a line per session, then its first matches; every field escaped (a log is untrusted). */
export function formatSearch(result: SearchResult, needle: string, withCwd: boolean): string {
  const lines: string[] = []
  for (const { summary, matches, count } of result.hits) {
    lines.push(
      `${escapeLine(summary.id)}  ${when(summary.updatedAt)}  ${escapeLine(summary.title || '(no prompt)').slice(0, 70)}${withCwd ? `  ${escapeLine(summary.cwd)}` : ''}`,
    )
    for (const match of matches) lines.push(`    ${match.where.padEnd(6)} ${escapeLine(match.snippet)}`)
    if (count > matches.length) lines.push(`    … and ${count - matches.length} more`)
  }
  for (const { summary, problem } of result.unreadable)
    lines.push(`${escapeLine(summary.id)}  unreadable: ${escapeLine(problem)}`)
  if (!result.hits.length) lines.unshift(`No session mentions "${escapeLine(needle)}".`)
  return lines.join('\n')
}
