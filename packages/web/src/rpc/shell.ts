import { recordUserCommand, runUserCommand } from '@keel/door/user-command'
import type { SessionState } from '../session-state.ts'
import { RpcFailure } from './failure.ts'
import type { Method } from './method.ts'

const MAX_COMMAND_CHARS = 100_000

/**
 * The person's `!command` (the composer's text after `!`), run as the TUI runs it (@keel/door/user-command): through
 * the bash tool under the deny rules and the mode's sandbox, without asking, and recorded on the log as a user message
 * the model reads next turn. Answers once it ended; `session.cancel` stops it.
 */
export const shell: Method<'session.shell'> = async (served, params) => {
  const sessionId = served.scopedSessionId(params)
  const command = params.command
  if (typeof command !== 'string' || !command.trim())
    throw new RpcFailure('bad-request', 'command must be a non-empty string')
  if (command.length > MAX_COMMAND_CHARS)
    throw new RpcFailure('bad-request', `command is ${command.length} characters; the limit is ${MAX_COMMAND_CHARS}`)
  const now = served.states.of(sessionId)
  if (now.kind === 'turn' || now.kind === 'command')
    throw new RpcFailure('busy', `a ${now.kind} is running in this session; wait for it to end or cancel it`)
  if (now.kind === 'rewinding') throw new RpcFailure('busy', 'a rewind of this session is running')
  const agent = served.agentFor(sessionId)
  if (agent.status === 'running') throw new RpcFailure('busy', 'a turn is already running in this session')
  const abort = new AbortController()
  let finished!: () => void
  const running: SessionState = {
    kind: 'command',
    done: new Promise<void>((done) => (finished = done)),
    abort,
    after: now,
  }
  served.states.set(sessionId, running)
  try {
    const outcome = await runUserCommand({ ctx: served.ctx, agent, command: command.trim(), signal: abort.signal })
    if (outcome.kind === 'refused') return { ran: false, reason: outcome.reason }
    recordUserCommand(agent, command.trim(), outcome.output)
    return { ran: true }
  } finally {
    served.states.settle(sessionId, running, now)
    finished()
  }
}
