// Session logs for paging tests and the bench, built with the real Session (which validates every append) so they
// have the shape the agent loop writes: calls logged before results, two calls per step answered together.
import { writeFileSync } from 'node:fs'
import { Session, SESSION_FORMAT_VERSION, type SessionHeader } from '@keel/session'
import type { TodoItem } from '@keel/todo'

export function header(id = 'fixture-session', cwd = '/tmp'): SessionHeader {
  return { type: 'session', version: SESSION_FORMAT_VERSION, id, createdAt: 0, cwd }
}

export interface LogOptions {
  /** Write a plan in every n-th turn (default 3); the last turn's plan is `finalPlan` when given. */
  planEvery?: number
  finalPlan?: TodoItem[]
  /** Bytes of tool output per result (default 200). */
  outputBytes?: number
}

const append = { surfaceOp: { op: 'append' } } as const

/** Appends one turn: prompt, a step with two tool calls (and maybe a plan), then a closing answer. */
export function appendTurn(session: Session, turn: number, options: LogOptions & { plan?: TodoItem[] } = {}): void {
  const output = 'x'.repeat(options.outputBytes ?? 200)
  session.append('turn/start', { turn, trigger: 'prompt' })
  session.append('step/start', { turn, step: 1 })
  session.append(
    'user/message',
    { message: { role: 'user', content: [{ type: 'text', text: `request ${turn}` }], source: 'user' } },
    append,
  )
  const a = `call_${turn}_a`
  const b = `call_${turn}_b`
  session.append(
    'assistant/message',
    {
      turn,
      step: 1,
      message: {
        role: 'assistant',
        content: [
          { type: 'text', text: `Working on request ${turn}.` },
          { type: 'tool-call', id: a, name: 'read', arguments: '{"path":"a.ts"}' },
          {
            type: 'tool-call',
            id: b,
            name: options.plan ? 'todo_write' : 'read',
            arguments: options.plan ? JSON.stringify({ todos: options.plan }) : '{"path":"b.ts"}',
          },
        ],
      },
    },
    append,
  )
  session.append('tool/call', { turn, step: 1, callId: a, name: 'read', arguments: '{"path":"a.ts"}' })
  session.append('tool/call', {
    turn,
    step: 1,
    callId: b,
    name: options.plan ? 'todo_write' : 'read',
    arguments: options.plan ? JSON.stringify({ todos: options.plan }) : '{"path":"b.ts"}',
  })
  if (options.plan) session.append('todo/write', { todos: options.plan })
  session.append(
    'tool/result',
    { turn, step: 1, callId: a, content: [{ type: 'text', text: output }], isError: false },
    append,
  )
  session.append(
    'tool/result',
    {
      turn,
      step: 1,
      callId: b,
      content: [{ type: 'text', text: options.plan ? 'Todo list updated.' : output }],
      isError: false,
    },
    append,
  )
  session.append('step/end', { turn, step: 1 })
  session.append('step/start', { turn, step: 2 })
  session.append(
    'assistant/message',
    { turn, step: 2, message: { role: 'assistant', content: [{ type: 'text', text: `Done with request ${turn}.` }] } },
    append,
  )
  session.append('step/end', { turn, step: 2 })
  session.append('turn/end', { turn, reason: 'completed' })
}

export function planFor(turn: number): TodoItem[] {
  return [
    { content: `turn ${turn}: first`, status: 'completed' },
    { content: `turn ${turn}: second`, status: 'in_progress' },
    { content: `turn ${turn}: third`, status: 'pending' },
  ]
}

/** A log of at least `minEvents` events (whole turns). */
export function buildLog(minEvents: number, options: LogOptions = {}, id?: string): Session {
  const session = new Session(header(id))
  const every = options.planEvery ?? 3
  for (let turn = 1; session.seq < minEvents; turn++) {
    const last = session.seq + 15 >= minEvents
    const plan = last && options.finalPlan ? options.finalPlan : turn % every === 0 ? planFor(turn) : undefined
    appendTurn(session, turn, { ...options, plan })
  }
  return session
}

/** The session file exactly as SessionWriter lays it out: the header line, then one event per line. */
export function writeLogFile(session: Session, path: string): void {
  const lines = [JSON.stringify(session.header)]
  for (const event of session.events) lines.push(JSON.stringify(event))
  writeFileSync(path, lines.join('\n') + '\n')
}
