import type { QueuedPrompt } from '@keel/agent'
import type { QueuedItem } from '../protocol.ts'
import { RpcFailure } from './failure.ts'
import type { Method } from './method.ts'

/** A queued prompt as the page gets it (`agent/queue` frames, `queue.remove`): its text blocks, joined. */
export function queuedItem(item: QueuedPrompt): QueuedItem {
  const text = item.content.map((block) => (block.type === 'text' ? block.text : '')).join('')
  return { id: item.id, kind: item.kind, text }
}

/**
 * Takes a queued prompt back out of the agent's one queue (every door shares it), before it is delivered. The queue
 * lives in the process that runs the session, so only an agent this host holds has one to take from.
 */
export const removeQueued: Method<'queue.remove'> = (served, params) => {
  const sessionId = served.scopedSessionId(params)
  const id = params.id
  if (typeof id !== 'string' || !/^[\w-]{1,64}$/.test(id))
    throw new RpcFailure('bad-request', "id must be a queued prompt's id (as the agent/queue frame names it)")
  const agent = served.held.get(sessionId)
  if (!agent)
    throw new RpcFailure(
      'unavailable',
      `session ${sessionId} is not open in this process: its queue is in the process that runs it`,
    )
  const item = agent.queue.remove(id)
  return { taken: item ? queuedItem(item) : null }
}
