// An in-process host over a whole Keel (real plugins, scripted model), driven through its HTTP routes.
import type { ScriptStep } from '@keel/llm'
import { makeKeel, waitFor, type Keel, type KeelOptions } from '../../../test-support/harness.ts'
import { WebHost, type WebHostOptions } from '../src/host.ts'
import type { RpcMethod, RpcMethods, RpcResult, ServerFrame } from '../src/protocol.ts'

export const TOKEN = 'test-token-0123456789abcdefghij'

export interface HostFixture {
  k: Keel
  host: WebHost
  rpc<M extends RpcMethod>(
    method: M,
    params: RpcMethods[M]['params'] | Record<string, unknown>,
    token?: string,
  ): Promise<RpcResult<RpcMethods[M]['value']>>
  /** The value of a call that must succeed. */
  ok<M extends RpcMethod>(
    method: M,
    params: RpcMethods[M]['params'] | Record<string, unknown>,
  ): Promise<RpcMethods[M]['value']>
  events(): Promise<EventStream>
  dispose(): Promise<void>
}

export interface EventStream {
  frames: ServerFrame[]
  /** Frames of one session's `session/event` type, in arrival order. */
  sessionEvents(sessionId: string): Extract<ServerFrame, { type: 'session/event' }>[]
  close(): Promise<void>
}

/**
 * A host as `keel serve` makes one, told it listens where `app.request` aims (http://localhost/, port 80), so
 * in-process requests name it.
 */
export function makeHost(k: Keel, options: Partial<WebHostOptions> = {}): WebHost {
  const host = new WebHost({ ctx: k.ctx, cwd: k.cwd, model: k.model, token: TOKEN, ...options })
  host.listening('127.0.0.1', 80)
  return host
}

export async function hostFixture(
  steps: ScriptStep[],
  options: KeelOptions & { host?: Partial<WebHostOptions> } = {},
): Promise<HostFixture> {
  const { host: hostOptions, ...keelOptions } = options
  const k = await makeKeel({ steps, shell: false, ...keelOptions })
  const host = makeHost(k, hostOptions)
  const streams: EventStream[] = []
  const rpc = async (method: string, params: unknown, token = TOKEN) => {
    const response = await fixture.host.app.request(`/api/${method}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
      body: JSON.stringify(params),
    })
    return response.json()
  }
  const fixture: HostFixture = {
    k,
    host,
    rpc: rpc as HostFixture['rpc'],
    async ok(method, params) {
      const result = await rpc(method, params)
      if (!result.ok) throw new Error(`${method} failed: ${result.error.code}: ${result.error.message}`)
      return result.value
    },
    async events() {
      const stream = await openEvents(fixture.host)
      streams.push(stream)
      return stream
    },
    async dispose() {
      for (const stream of streams) await stream.close()
      await fixture.host.close()
      await k.dispose()
    },
  }
  return fixture
}

export async function openEvents(host: WebHost, token = TOKEN): Promise<EventStream> {
  const response = await host.app.request('/api/events', { headers: { authorization: `Bearer ${token}` } })
  if (response.status !== 200) throw new Error(`events: HTTP ${response.status}`)
  const reader = response.body!.getReader()
  const decoder = new TextDecoder()
  const frames: ServerFrame[] = []
  let buffer = ''
  const pump = (async () => {
    for (;;) {
      const { value, done } = await reader.read().catch(() => ({ value: undefined, done: true as const }))
      if (done) return
      buffer += decoder.decode(value, { stream: true })
      let end: number
      while ((end = buffer.indexOf('\n\n')) >= 0) {
        const chunk = buffer.slice(0, end)
        buffer = buffer.slice(end + 2)
        for (const line of chunk.split('\n')) if (line.startsWith('data: ')) frames.push(JSON.parse(line.slice(6)))
      }
    }
  })()
  await waitFor(() => frames.some((frame) => frame.type === 'hello'), 'hello frame')
  return {
    frames,
    sessionEvents: (sessionId) =>
      frames.filter(
        (frame): frame is Extract<ServerFrame, { type: 'session/event' }> =>
          frame.type === 'session/event' && frame.sessionId === sessionId,
      ),
    async close() {
      await reader.cancel().catch(() => {})
      await pump
    },
  }
}

export { waitFor }
