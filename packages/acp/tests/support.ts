// Test plumbing for the ACP bridge: the SDK's own client app, connected to a bridge in-process over NDJSON byte
// streams (the same framing as stdio) or to a `keel acp` child process.
import { readdirSync, readFileSync } from 'node:fs'
import {
  client,
  methods,
  ndJsonStream,
  PROTOCOL_VERSION,
  type ClientConnection,
  type RequestPermissionRequest,
  type RequestPermissionResponse,
  type SessionNotification,
  type SessionUpdate,
} from '@agentclientprotocol/sdk'
import type { Keel } from '../../../test-support/harness.ts'
import { AcpBridge } from '../src/bridge.ts'

/** How the test client answers `session/request_permission` (given the request and the request's abort signal). */
type PermissionResponder = (
  request: RequestPermissionRequest,
  signal: AbortSignal,
) => RequestPermissionResponse | Promise<RequestPermissionResponse>

/** What an editor's "Allow" button sends. */
const allowOnce: PermissionResponder = () => ({ outcome: { outcome: 'selected', optionId: 'allow_once' } })

export interface TestClient {
  connection: ClientConnection
  /** Every `session/update` received, in order. */
  notifications: SessionNotification[]
  /** Every `session/request_permission` received, in order. */
  permissionRequests: RequestPermissionRequest[]
  /** Replaces how permission requests are answered (default: allow once). */
  respond(responder: PermissionResponder): void
  updates(sessionId: string, kind?: SessionUpdate['sessionUpdate']): SessionUpdate[]
  /** Forgets what was received so far. */
  clear(): void
}

export function testClient(stream: ReturnType<typeof ndJsonStream>): TestClient {
  const notifications: SessionNotification[] = []
  const permissionRequests: RequestPermissionRequest[] = []
  let responder: PermissionResponder = allowOnce
  const app = client({ name: 'keel-acp-tests' })
    .onNotification(methods.client.session.update, ({ params }) => {
      notifications.push(params)
    })
    .onRequest(methods.client.session.requestPermission, ({ params, signal }) => {
      permissionRequests.push(params)
      return responder(params, signal)
    })
  const connection = app.connect(stream)
  return {
    connection,
    notifications,
    permissionRequests,
    respond: (next) => {
      responder = next
    },
    updates: (sessionId, kind) =>
      notifications
        .filter((n) => n.sessionId === sessionId && (!kind || n.update.sessionUpdate === kind))
        .map((n) => n.update),
    clear: () => {
      notifications.length = 0
      permissionRequests.length = 0
    },
  }
}

export async function initialize(test: TestClient) {
  return test.connection.agent.request(methods.agent.initialize, {
    protocolVersion: PROTOCOL_VERSION,
    clientCapabilities: {},
  })
}

/** A bridge over an in-process Keel and a client talking to it through in-memory NDJSON streams. */
export function connectInProcess(keel: Keel, plan = false, log: (line: string) => void = () => {}) {
  const toAgent = new TransformStream<Uint8Array, Uint8Array>()
  const toClient = new TransformStream<Uint8Array, Uint8Array>()
  const bridge = new AcpBridge(keel.ctx, { model: async () => keel.model, plan, version: 'test', log })
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
export function chunkText(
  updates: SessionUpdate[],
  kind: 'agent_message_chunk' | 'agent_thought_chunk' | 'user_message_chunk',
): string {
  return updates.map((u) => (u.sessionUpdate === kind && u.content.type === 'text' ? u.content.text : '')).join('')
}

/**
 * Tool activity, reduced to what a client would act on: each call and its final update. A call that waited for
 * approval also has `pending` / `in_progress` updates in between (whether it asks depends on the mode and on whether
 * the sandbox runs here); `permissions.test.ts` checks those.
 */
export function toolTrace(updates: SessionUpdate[]): string[] {
  return updates.flatMap((u) => {
    if (u.sessionUpdate === 'tool_call') return [`call ${u.toolCallId} ${u.kind} ${u.status}`]
    if (u.sessionUpdate === 'tool_call_update' && u.status !== 'pending' && u.status !== 'in_progress')
      return [`update ${u.toolCallId} ${u.status}`]
    return []
  })
}

export function planEntries(updates: SessionUpdate[]): { content: string; status: string; priority: string }[][] {
  return updates.flatMap((u) =>
    u.sessionUpdate === 'plan'
      ? [u.entries.map(({ content, status, priority }) => ({ content, status, priority }))]
      : [],
  )
}

/**
 * The live (not zombie) processes whose command line contains `marker`, other than this one. Found through /proc
 * rather than a pid the command records: inside the workspace sandbox a command sees its own pid namespace.
 */
export function processesWith(marker: string): number[] {
  const found: number[] = []
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue
    try {
      if (!readFileSync(`/proc/${entry}/cmdline`, 'utf8').includes(marker)) continue
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8')
      if (stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z') found.push(Number(entry))
    } catch {}
  }
  return found
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
      when,
      reasoning: 'Plan first, then run it.',
      text: 'Working on it. ',
      toolCalls: [
        { id: 'call-plan-1', name: 'todo_write', arguments: { todos: FIRST_PLAN } },
        { id: 'call-bash-1', name: 'bash', arguments: { command: 'echo hello-from-bash' } },
      ],
    },
    { when, toolCalls: [{ id: 'call-plan-2', name: 'todo_write', arguments: { todos: DONE_PLAN } }] },
    { when, text: 'All done.' },
  ]
}

let sleeps = 0

/**
 * A command that sleeps for long, with a duration no other test uses (its marker, to find it among the processes).
 */
export function sleepSteps(when?: string): {
  steps: { when?: string; toolCalls: { id: string; name: string; arguments: { command: string } }[] }[]
  marker: string
} {
  const marker = `30.${process.pid}${++sleeps}`
  return {
    steps: [{ when, toolCalls: [{ id: 'call-sleep', name: 'bash', arguments: { command: `exec sleep ${marker}` } }] }],
    marker,
  }
}
