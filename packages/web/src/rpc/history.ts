import type { Session, SessionEvent } from '@keel/session'
import { type LogTail, pageOfEvents, pageOfFile, standingPlanOfFile } from '../history.ts'
import {
  DEFAULT_PAGE_MESSAGES,
  MAX_PAGE_MESSAGES,
  type HistoryPage,
  type ModelInfo,
  type ProjectionsBlock,
} from '../protocol.ts'
import type { Served } from '../served.ts'
import { usageOfEvents, usageOfFile } from '../usage.ts'
import { RpcFailure } from './failure.ts'
import type { Method } from './method.ts'
import { optionalInteger } from './params.ts'

export const history: Method<'session.history'> = (served, params) => {
  const sessionId = served.scopedSessionId(params)
  const beforeSeq = optionalInteger(params, 'beforeSeq', 0, Number.MAX_SAFE_INTEGER)
  const maxMessages = optionalInteger(params, 'maxMessages', 1, MAX_PAGE_MESSAGES) ?? DEFAULT_PAGE_MESSAGES
  const tail = beforeSeq === undefined
  const live = served.ctx.sessions.get(sessionId)
  if (live) {
    // One synchronous read of the in-memory log: the page and the projections describe the same instant.
    const page = pageOfEvents(live.events, { beforeSeq, maxMessages })
    const out: HistoryPage = { events: page.events.map((event) => served.entry(event)), hasMore: page.hasMore }
    if (tail) {
      out.projections = liveProjections(served, live)
      out.running = served.running(sessionId)
      out.model = modelInfo(served)
      out.usage = usageOfEvents(live.events)
      if (served.asks.enabled) out.asks = served.asks.pendingFor(sessionId)
    }
    return out
  }
  if (!served.ctx.sessions.pathOf(sessionId)) throw new RpcFailure('not-found', `no session with id ${sessionId}`)
  // Read through the store: a file's tail, or the database's last rows by (session_id, seq).
  const path: LogTail = (visit) => served.ctx.sessions.backscan(sessionId, visit)
  const page = pageOfFile(path, { beforeSeq, maxMessages })
  const out: HistoryPage = { events: page.events.map((event) => served.entry(event)), hasMore: page.hasMore }
  if (tail) {
    out.projections = fileProjections(served, path, page.lastSeq, page.events)
    // Another process may run it (a shared store): whether a turn runs there, and the approvals it waits for.
    out.running = served.remote?.running(sessionId) ?? false
    out.model = modelInfo(served)
    out.usage = usageOfFile(path, page.lastSeq)
    if (served.remote) out.asks = served.remote.pendingFor(sessionId)
  }
  return out
}

/** The window shown is the one compaction works against: its configured window first, else the model's. */
function modelInfo(served: Served): ModelInfo {
  const { provider, model, contextWindow } = served.model
  const window = served.ctx.get('compaction')?.config.contextWindow || contextWindow
  return window ? { provider, model, contextWindow: window } : { provider, model }
}

function liveProjections(served: Served, session: Session): ProjectionsBlock {
  const projections = served.ctx.get('projections')
  const block: ProjectionsBlock = projections
    ? (projections.snapshot(session) as ProjectionsBlock)
    : { asOfSeq: session.seq - 1, values: {} }
  const subagents = served.ctx.get('subagents')
  if (subagents && 'subagentPlans' in block.values)
    block.values = { ...block.values, subagentPlans: subagents.plans(session) }
  return block
}

/**
 * A session not open here is read from its file's tail, so only projections with a backwards rule are offered:
 * `todos`. Folding the others would mean reading the whole log; the client derives finished subagent plans from
 * the `subagent/end` events it holds instead.
 */
function fileProjections(
  served: Served,
  path: LogTail,
  lastSeq: number,
  page: readonly SessionEvent[],
): ProjectionsBlock {
  const projections = served.ctx.get('projections')
  const values: ProjectionsBlock['values'] = {}
  if (projections?.has('todos')) values.todos = standingPlanOfFile(path, lastSeq, page).todos
  return { asOfSeq: lastSeq, values }
}
