// The first model request of `keel -p`, sent before cordis and the plugins boot. Booting is most of a cold start
// (loading the plugins' code, cordis wiring them), and the request needs none of it but the tools' schemas, which do
// not change from run to run: print mode keeps them in $KEEL_HOME/cache/first-request.json (written after a run's
// first request) and, when they are there for this version and these settings, sends the request at once. The boot
// then overlaps the model's time to first token.
//
// The agent still builds its first request as always. The adapter it is given hands it the reply already streaming
// only if that request is the one sent, field by field; otherwise the early one is cancelled and the agent's request
// is sent instead (and the stored schemas replaced), so a stale file costs a request, never a wrong answer. Only a
// plain run is sent early: a new session of a real provider, no --config, no --allow and no MCP server (their tools
// are only known once the servers are up).
import { createHash, randomUUID } from 'node:crypto'
import { systemPrompt } from '@keel/agent/prompt'
import type {
  CacheTtl,
  LlmAdapter,
  LlmRequest,
  ModelSettings,
  ProviderSettings,
  StreamChunk,
  ToolSchema,
} from '@keel/llm'
import { expandHeaders } from '@keel/llm/model-settings'
import { createProvider, PROVIDER_NAMES, reasoningFor, splitSpec } from '@keel/llm/providers'
import { withRetries } from '@keel/llm/retries'
import { readProjectServers } from '@keel/mcp/config'
import type { ContentBlock } from '@keel/session/messages'
import { readCache, writeCache } from '@keel/session/cache'
import { loadInstructions, type Instructions } from '@keel/settings'
import type { Flags } from './args.ts'
import { SHIPPED_COMPOSITION } from './composition.ts'

/** A request on its way, and what the agent that takes it over must be made with. */
export interface FirstRequest {
  sessionId: string
  /** The model adapter for the agent: its first `stream()` takes over the request if it matches. */
  model: LlmAdapter
  instructions: Instructions
  /** Cancels the request if no agent took it over (the run failed before its turn). */
  discard(): void
}

interface StoredTools {
  key: string
  tools: readonly ToolSchema[]
}

const CACHE_NAME = 'first-request.json'

/** What the stored tools hold for: this Keel and these settings (a settings file can change a tool's config). */
export function toolsKey(version: string, overrides: Record<string, unknown> | undefined): string {
  const inputs = JSON.stringify({ version, overrides: overrides ?? {}, dev: process.env.KEEL_DEV === '1' })
  return createHash('sha256').update(inputs).digest('hex').slice(0, 32)
}

function storedTools(key: string): readonly ToolSchema[] | undefined {
  try {
    const stored = JSON.parse(readCache(CACHE_NAME) ?? '') as StoredTools
    return stored.key === key && Array.isArray(stored.tools) ? stored.tools : undefined
  } catch {
    return undefined
  }
}

/** Keeps the tools a first request was sent with, for the next run; a cache, so a failure to write is ignored. */
export function rememberTools(key: string, tools: readonly ToolSchema[]): void {
  writeCache(CACHE_NAME, JSON.stringify({ key, tools } satisfies StoredTools))
}

export interface FirstRequestOptions {
  flags: Flags
  cwd: string
  /** `provider/model`, after settings. */
  spec: string
  prompt: string
  /** Entry id → config from settings files (settings.ts). */
  overrides: Record<string, Record<string, unknown>> | undefined
  toolsKey: string
}

/** Sends the first request now when the run is plain and the tools are known; undefined leaves it to the agent. */
export async function sendFirstRequest(options: FirstRequestOptions): Promise<FirstRequest | undefined> {
  const { flags, cwd, spec, overrides } = options
  if (flags.config || flags.resume || flags.continue || flags.fork || flags.allow?.length) return undefined
  const split = splitSpec(spec)
  if (!split || !(PROVIDER_NAMES as readonly string[]).includes(split.provider)) return undefined
  if (Object.keys((overrides?.mcp?.servers as object | undefined) ?? {}).length) return undefined
  try {
    if (Object.keys(readProjectServers(cwd).servers).length) return undefined
  } catch {
    return undefined // a broken .mcp.json: the MCP plugin reports it
  }
  const tools = storedTools(options.toolsKey)
  if (!tools) return undefined
  // As the llm plugin would make it: the composition's (or the settings') retry policy and idle timeout.
  const llm = (overrides?.llm ?? SHIPPED_COMPOSITION.find((entry) => entry.id === 'llm')!.config) as {
    retryAttempts: number
    retryBaseDelayMs: number
    retryMaxWaitMs?: number
    retryMaxTotalWaitMs?: number
    idleTimeoutMs: number
    models?: ModelSettings
    promptCacheTtl?: CacheTtl
    providers?: ProviderSettings
  }
  let adapter: LlmAdapter
  try {
    const made = await createProvider(split.provider, split.model, {
      cwd,
      env: process.env,
      baseUrl: flags['base-url'],
      idleTimeoutMs: llm.idleTimeoutMs,
      reasoning: reasoningFor(llm.models, spec),
      models: llm.models,
      promptCacheTtl: llm.promptCacheTtl,
      headers: expandHeaders(llm.providers?.[split.provider]?.headers, process.env, `providers.${split.provider}`),
    })
    adapter = withRetries(made, {
      attempts: llm.retryAttempts,
      baseDelayMs: llm.retryBaseDelayMs,
      maxWaitMs: llm.retryMaxWaitMs,
      maxTotalWaitMs: llm.retryMaxTotalWaitMs,
    })
  } catch {
    return undefined // no key, a bad URL: the agent's own attempt reports it
  }
  const sessionId = randomUUID()
  const instructions = loadInstructions(cwd)
  const content: ContentBlock[] = [{ type: 'text', text: options.prompt }]
  // As the agent builds it for a new session (Agent.step): the same fields, in the same order.
  const request: LlmRequest = {
    system: systemPrompt(cwd, new Date(), instructions.text),
    messages: [{ role: 'user', content, source: 'user' }],
    tools: [...tools],
    sessionId,
  }
  return { sessionId, instructions, ...takeOver(adapter, request, options.toolsKey) }
}

/** Fields compared as JSON: the order of keys counts, as it does in the body sent. */
function sameRequest(a: LlmRequest, b: LlmRequest): boolean {
  return (
    a.system === b.system &&
    a.sessionId === b.sessionId &&
    a.maxTokens === b.maxTokens &&
    JSON.stringify(a.messages) === JSON.stringify(b.messages) &&
    JSON.stringify(a.tools) === JSON.stringify(b.tools)
  )
}

/** Starts `sent` on `adapter`; the returned model gives its reply to the first `stream()` call that asks for it. */
function takeOver(adapter: LlmAdapter, sent: LlmRequest, key: string): { model: LlmAdapter; discard: () => void } {
  const controller = new AbortController()
  const reply = adapter.stream(sent, controller.signal)[Symbol.asyncIterator]()
  const first = reply.next() // the request leaves now
  first.catch(() => {}) // a failure reaches whoever reads the reply; nobody may
  let waiting = true
  const discard = () => {
    if (!waiting) return
    waiting = false
    controller.abort(new Error('the first request was not used'))
  }
  const model: LlmAdapter = {
    provider: adapter.provider,
    model: adapter.model,
    contextWindow: adapter.contextWindow,
    stream(request, signal) {
      if (!waiting) return adapter.stream(request, signal)
      if (!sameRequest(request, sent)) {
        discard()
        rememberTools(key, request.tools)
        return adapter.stream(request, signal)
      }
      waiting = false
      return replay(first, reply, controller, signal)
    },
  }
  return { model, discard }
}

/** The reply of the request sent early, cancelled when the agent's own signal is. */
async function* replay(
  first: Promise<IteratorResult<StreamChunk>>,
  reply: AsyncIterator<StreamChunk>,
  controller: AbortController,
  signal: AbortSignal,
): AsyncIterable<StreamChunk> {
  const cancel = () => controller.abort(signal.reason)
  if (signal.aborted) cancel()
  else signal.addEventListener('abort', cancel, { once: true })
  try {
    for (let next = await first; !next.done; next = await reply.next()) yield next.value
  } finally {
    signal.removeEventListener('abort', cancel)
    await reply.return?.()
  }
}
