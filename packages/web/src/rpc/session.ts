import { resolve } from 'node:path'
import type { Compaction } from '@keel/compaction'
import { expandSlash, isSlashPrompt } from '@keel/door/slash'
import type { SessionState } from '../session-state.ts'
import { imageFromBase64 } from '@keel/session/image'
import { errorLine, notify, type ContentBlock, type ImageBlock } from '@keel/session'
import { RpcFailure } from './failure.ts'
import type { Method } from './method.ts'

const MAX_PROMPT_CHARS = 200_000
/** Images one prompt may carry (the body limit of routes.ts makes room for this many). */
export const MAX_PROMPT_IMAGES = 4

/** The prompt's images, each checked by its bytes (@keel/session/image); a bad one is the request's one-line error. */
function promptImages(value: unknown): ImageBlock[] {
  if (value === undefined || value === null) return []
  if (!Array.isArray(value)) throw new RpcFailure('bad-request', 'images must be a list of { name, data }')
  if (value.length > MAX_PROMPT_IMAGES)
    throw new RpcFailure('bad-request', `a prompt takes at most ${MAX_PROMPT_IMAGES} images, got ${value.length}`)
  return value.map((image, i) => {
    const { name, data } = (image ?? {}) as { name?: unknown; data?: unknown }
    if (typeof data !== 'string') throw new RpcFailure('bad-request', `images[${i}].data must be base64 text`)
    const label = typeof name === 'string' && name ? name.slice(0, 200) : `images[${i}]`
    const block = imageFromBase64(label, data)
    if ('error' in block) throw new RpcFailure('bad-request', block.error)
    return block
  })
}

export const listSessions: Method<'session.list'> = (served) => {
  const remote = served.remote
  if (!remote)
    return {
      sessions: served.ctx.sessions.list(served.all ? undefined : served.cwd).map((summary) => served.info(summary)),
      cwd: served.cwd,
      all: served.all,
    }
  // A shared store: this folder's sessions on every machine (or every session with --all), each with its host.
  const here = resolve(served.cwd)
  const summaries = served.ctx.sessions.list().filter((summary) => served.all || resolve(summary.cwd) === here)
  const running = remote.runningOf(
    summaries.filter((summary) => !served.ctx.sessions.get(summary.id)).map((summary) => summary.id),
  )
  return {
    sessions: summaries.map((summary) => {
      const info = served.info(summary)
      return running.has(summary.id) ? { ...info, running: true } : info
    }),
    cwd: served.cwd,
    all: served.all,
    host: remote.host,
  }
}

export const createSession: Method<'session.create'> = (served) => {
  const agent = served.ctx.agents.create({ cwd: served.cwd, model: served.model, fileNow: true })
  served.held.add(agent)
  const session = served.infoOfHeader(agent.session.header)
  served.hub.broadcast({ type: 'session/created', session })
  return { session }
}

export const prompt: Method<'session.prompt'> = (served, params) => {
  const sessionId = served.scopedSessionId(params)
  const text = params.text
  const images = promptImages(params.images)
  if (typeof text !== 'string' || (!text.trim() && !images.length))
    throw new RpcFailure('bad-request', 'text must be a non-empty string')
  if (text.length > MAX_PROMPT_CHARS)
    throw new RpcFailure('bad-request', `text is ${text.length} characters; the limit is ${MAX_PROMPT_CHARS}`)
  const kind = params.kind ?? 'steer'
  if (kind !== 'steer' && kind !== 'follow-up')
    throw new RpcFailure('bad-request', `kind must be "steer" or "follow-up", not ${JSON.stringify(kind)}`)
  const now = served.states.of(sessionId)
  if (now.kind === 'command')
    throw new RpcFailure('busy', 'a command is running in this session; wait for it to end or cancel it')
  if (now.kind === 'rewinding') throw new RpcFailure('busy', 'a rewind of this session is running')
  const agent = served.agentFor(sessionId)
  const warn = (error: unknown) => {
    served.ctx.emit(
      served.ctx,
      'internal/warning',
      `web: prompt in ${sessionId} failed: ${(error as Error)?.message ?? error}`,
    )
  }
  let done: Promise<void>
  if (isSlashPrompt(text, agent.cwd)) {
    // A command file runs as a turn of its own (its shell-outs first, then its expansion), never as steering.
    if (agent.status === 'running')
      throw new RpcFailure('busy', 'a command file starts a turn of its own; send it when this turn ends')
    done = expandSlash(served.ctx, agent, text, false, (line) =>
      notify(served.ctx, 'extend', line.replace(/^keel: /, '')),
    )
      .then((slash) =>
        agent.prompt([{ type: 'text', text: slash.text }, ...images], {
          ...(slash.command ? { command: slash.command } : {}),
          ...(slash.model ? { model: slash.model } : {}),
        }),
      )
      .then(() => agent.whenIdle())
      .then(() => {}, warn)
  } else {
    const content: ContentBlock[] = [...(text.trim() ? [{ type: 'text' as const, text }] : []), ...images]
    // While a turn runs the prompt joins the agent's one queue (every tab and door shares it, in the order sent).
    // Images for a model without vision are refused here, before anything: the page shows the line.
    let sent: ReturnType<typeof agent.send>
    try {
      sent = agent.send(content, kind)
    } catch (error) {
      throw new RpcFailure('bad-request', errorLine(error))
    }
    if (sent.queued) return { accepted: true, queued: { id: sent.queued.id, kind: sent.queued.kind } }
    // A compaction waiting for the next request is committed by this turn's first one. The session counts as in a
    // turn until the agent is idle, its queued follow-ups' turns included.
    done = sent.turn.then(() => agent.whenIdle()).then(() => {}, warn)
  }
  const turn: SessionState = { kind: 'turn', done }
  served.states.set(sessionId, turn)
  void done.finally(() => served.states.settle(sessionId, turn, { kind: 'idle' }))
  return { accepted: true }
}

export const cancel: Method<'session.cancel'> = (served, params) => {
  const id = served.scopedSessionId(params)
  const now = served.states.of(id)
  if (now.kind === 'turn') served.held.get(id)?.cancel()
  else if (now.kind === 'command') now.abort.abort(new Error('cancelled'))
  return { cancelled: now.kind === 'turn' || now.kind === 'command' }
}

export const compact: Method<'session.compact'> = async (served, params) => {
  const compaction: Compaction | undefined = served.ctx.get('compaction')
  if (!compaction)
    throw new RpcFailure('unavailable', 'compaction is not loaded (add @keel/compaction to the composition)')
  const agent = served.agentFor(served.scopedSessionId(params))
  const now = served.states.of(agent.id)
  if (now.kind === 'rewinding') throw new RpcFailure('busy', 'a rewind of this session is running')
  if (now.kind === 'command') throw new RpcFailure('busy', 'a command is running in this session')
  // Mid-turn the compaction runs at the turn's next request; the turn keeps the agent open meanwhile.
  if (now.kind === 'turn') return compaction.compact(agent)
  // An idle compaction is committed at the agent's next request; closing the agent before then would drop it.
  const compacting: SessionState = now.kind === 'compacting' ? now : { kind: 'compacting' }
  served.states.set(agent.id, compacting)
  try {
    const result = await compaction.compact(agent)
    if (result.applied !== 'next-request') served.states.settle(agent.id, compacting, { kind: 'idle' })
    return result
  } catch (error) {
    served.states.settle(agent.id, compacting, { kind: 'idle' })
    throw error
  }
}
