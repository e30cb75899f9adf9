// Test plumbing for the ACP bridge: the SDK's own client app, connected to a bridge in-process over NDJSON byte
// streams (the same framing as stdio) or to a `keel acp` child process.
import { readFileSync } from 'node:fs'
import { client, methods, ndJsonStream, PROTOCOL_VERSION, type ClientConnection, type SessionNotification, type SessionUpdate } from '@agentclientprotocol/sdk'
import type { Keel } from '../../../test-support/harness.ts'
import { AcpBridge } from '../src/bridge.ts'

export interface TestClient {
  connection: ClientConnection
  /** Every `session/update` received, in order. */
  notifications: SessionNotification[]
  updates(sessionId: string, kind?: SessionUpdate['sessionUpdate']): SessionUpdate[]
  /** Forgets what was received so far. */
  clear(): void
}

export function testClient(stream: ReturnType<typeof ndJsonStream>): TestClient {
  const notifications: SessionNotification[] = []
  const app = client({ name: 'keel-acp-tests' })
    .onNotification(methods.client.session.update, ({ params }) => { notifications.push(params) })
  const connection = app.connect(stream)
  return {
    connection,
    notifications,
    updates: (sessionId, kind) => notifications
      .filter((n) => n.sessionId === sessionId && (!kind || n.update.sessionUpdate === kind))
      .map((n) => n.update),
    clear: () => { notifications.length = 0 },
  }
}

export async function initialize(test: TestClient) {
  return test.connection.agent.request(methods.agent.initialize, { protocolVersion: PROTOCOL_VERSION, clientCapabilities: {} })
}

/** A bridge over an in-process Keel and a client talking to it through in-memory NDJSON streams. */
export function connectInProcess(keel: Keel, plan = false) {
  const toAgent = new TransformStream<Uint8Array, Uint8Array>()
  const toClient = new TransformStream<Uint8Array, Uint8Array>()
  const bridge = new AcpBridge(keel.ctx, { model: async () => keel.model, plan, version: 'test', log: () => {} })
  const agentConnection = bridge.app.connect(ndJsonStream(toClient.writable, toAgent.readable))
  const test = testClient(ndJsonStream(toAgent.writable, toClient.readable))
  return {
    ...test,
    bridge,
    async close() {
      test.connection.close()
      agentConnection.close()
      await bridge.close()
    },
  }
}

/** The text of every chunk of one kind, joined. */
export function chunkText(updates: SessionUpdate[], kind: 'agent_message_chunk' | 'agent_thought_chunk' | 'user_message_chunk'): string {
  return updates.map((u) => (u.sessionUpdate === kind && u.content.type === 'text' ? u.content.text : '')).join('')
}

/** Tool activity, reduced to what a client would act on. */
export function toolTrace(updates: SessionUpdate[]): string[] {
  return updates.flatMap((u) => {
    if (u.sessionUpdate === 'tool_call') return [`call ${u.toolCallId} ${u.kind} ${u.status}`]
    if (u.sessionUpdate === 'tool_call_update') return [`update ${u.toolCallId} ${u.status}`]
    return []
  })
}

export function planEntries(updates: SessionUpdate[]): { content: string; status: string; priority: string }[][] {
  return updates.flatMap((u) => (u.sessionUpdate === 'plan' ? [u.entries.map(({ content, status, priority }) => ({ content, status, priority }))] : []))
}

/** Alive and not a zombie. */
export function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0)
  } catch {
    return false
  }
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z'
  } catch {
    return false
  }
}

/** The plan-and-run turn every suite drives: a plan, a command, the plan completed, an answer. */
export const PLAN_PROMPT = 'plan and run'
export const FIRST_PLAN = [
  { content: 'Say hello', status: 'in_progress' },
  { content: 'Report back', status: 'pending' },
] as const
export const DONE_PLAN = [
  { content: 'Say hello', status: 'completed' },
  { content: 'Report back', status: 'completed' },
] as const

export function planAndRunSteps(when?: string) {
  return [
    {
      when, reasoning: 'Plan first, then run it.', text: 'Working on it. ',
      toolCalls: [
        { id: 'call-plan-1', name: 'todo_write', arguments: { todos: FIRST_PLAN } },
        { id: 'call-bash-1', name: 'bash', arguments: { command: 'echo hello-from-bash' } },
      ],
    },
    { when, toolCalls: [{ id: 'call-plan-2', name: 'todo_write', arguments: { todos: DONE_PLAN } }] },
    { when, text: 'All done.' },
  ]
}

/** A command that records its pid (bash execs into sleep, so the pid is the sleep's) and then sleeps. */
export function sleepSteps(when?: string) {
  return [{ when, toolCalls: [{ id: 'call-sleep', name: 'bash', arguments: { command: 'echo $$ > sleep.pid; exec sleep 30' } }] }]
}
