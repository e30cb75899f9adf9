import { existsSync, readFileSync } from 'node:fs'
import { isAbsolute, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { LlmError, type LlmAdapter, type LlmErrorKind, type LlmRequest, type StreamChunk } from './types.ts'
import { sleep } from './sleep.ts'

/**
 * One scripted model reply. `when` routes it: the step is only used for a session whose first user prompt
 * contains that text, so one script can drive a parent and its subagents.
 */
export interface ScriptStep {
  when?: string
  reasoning?: string
  text?: string
  toolCalls?: { name: string; arguments: unknown; id?: string }[]
  /** Fail the request instead of answering. */
  error?: { kind: LlmErrorKind; message: string }
  /** Stream a little, then wait until the request is aborted. */
  hang?: boolean
  /** Pause between chunks, to make streaming visible in demos and to test cancellation. */
  delayMs?: number
  usage?: { input: number; output: number }
}

export interface Script {
  steps: ScriptStep[]
  /** The context window the scripted model claims (front ends show the share in use); none when absent. */
  contextWindow?: number
  /** Takes images in the prompt, like a vision model; absent: like a model the catalog does not know. */
  vision?: boolean
}

/** Shipped scripts; looked up by walking up so the same code works from sources and from the CLI bundle. */
function shippedScripts(): string {
  let dir = fileURLToPath(new URL('.', import.meta.url))
  for (;;) {
    const candidate = join(dir, 'packages/llm/scripts')
    if (existsSync(candidate)) return candidate
    const parent = resolve(dir, '..')
    if (parent === dir) return fileURLToPath(new URL('../scripts/', import.meta.url))
    dir = parent
  }
}

/** `scripted/demo` names a shipped script; anything else is a path to a JSON script. */
export function loadScript(name: string, cwd = process.cwd()): Script {
  const path = /^[a-z0-9-]+$/.test(name)
    ? join(shippedScripts(), `${name}.json`)
    : isAbsolute(name)
      ? name
      : resolve(cwd, name)
  let parsed: Script
  try {
    parsed = JSON.parse(readFileSync(path, 'utf8'))
  } catch (error) {
    throw new LlmError('config', `cannot read scripted model ${path}: ${(error as Error).message}`)
  }
  if (!Array.isArray(parsed?.steps)) throw new LlmError('config', `scripted model ${path}: expected { "steps": [...] }`)
  return parsed
}

function firstPrompt(request: LlmRequest): string {
  const first = request.messages.find((message) => message.role === 'user')
  if (!first) return ''
  return first.content.map((block) => (block.type === 'text' ? block.text : '')).join('')
}

/** Replays a script of replies. Every request is recorded so tests can inspect what the model was sent. */
export class ScriptedAdapter implements LlmAdapter {
  readonly provider = 'scripted'
  /** A scripted model is free: its runs cost $0, not an unknown amount. */
  readonly price = { input: 0, output: 0 }
  readonly requests: LlmRequest[] = []
  private readonly used = new Set<number>()
  private firstUnused = 0
  private measured: { count: number; sum: number; first: object; last: object } | undefined
  private callSeq = 0

  /** `record: false` keeps no copies of requests (benchmarks run sessions long enough for that to matter). */
  constructor(
    readonly script: Script,
    readonly model = 'script',
    readonly contextWindow?: number,
    readonly options: { record?: boolean } = {},
  ) {}

  get vision(): boolean | undefined {
    return this.script.vision
  }

  async *stream(request: LlmRequest, signal: AbortSignal): AsyncIterable<StreamChunk> {
    if (this.options.record !== false) this.requests.push(structuredClone(request))
    const prompt = firstPrompt(request)
    // Steps before `firstUnused` are all consumed, so long scripts (benchmarks) do not rescan them on every request.
    while (this.used.has(this.firstUnused)) this.firstUnused++
    let index = -1
    for (let i = this.firstUnused; i < this.script.steps.length; i++) {
      const step = this.script.steps[i]!
      if (!this.used.has(i) && (step.when === undefined || prompt.includes(step.when))) {
        index = i
        break
      }
    }
    if (index < 0)
      throw new LlmError(
        'bad-request',
        `scripted model: no step left for a session whose prompt is ${JSON.stringify(prompt.slice(0, 60))}`,
      )
    this.used.add(index)
    const step = this.script.steps[index]!
    const pause = () => (step.delayMs ? sleep(step.delayMs, signal) : Promise.resolve())
    if (step.error) throw new LlmError(step.error.kind, step.error.message)
    if (step.reasoning) {
      for (const piece of pieces(step.reasoning)) {
        await pause()
        yield { type: 'reasoning-delta', text: piece }
      }
    }
    if (step.text) {
      for (const piece of pieces(step.text)) {
        await pause()
        yield { type: 'text-delta', text: piece }
      }
    }
    if (step.hang) {
      await sleep(24 * 3600_000, signal)
      return
    }
    const calls = step.toolCalls ?? []
    for (const [i, call] of calls.entries()) {
      await pause()
      const args = typeof call.arguments === 'string' ? call.arguments : JSON.stringify(call.arguments)
      yield { type: 'tool-call-start', index: i, id: call.id ?? `call_${++this.callSeq}_${index}`, name: call.name }
      const half = Math.ceil(args.length / 2)
      yield { type: 'tool-call-delta', index: i, argumentsDelta: args.slice(0, half) }
      yield { type: 'tool-call-delta', index: i, argumentsDelta: args.slice(half) }
    }
    const input = step.usage?.input ?? Math.ceil(this.sizeOf(request.messages) / 4)
    yield {
      type: 'usage',
      usage: {
        input,
        output: step.usage?.output ?? Math.ceil(((step.text ?? '').length + JSON.stringify(calls).length) / 4),
      },
    }
    yield { type: 'finish', reason: calls.length ? 'tool-calls' : 'stop' }
  }

  /**
   * The length of `JSON.stringify(messages)`. History only grows at the end (a compaction replaces its start, which
   * changes the first message), so the previous request's total is reused and only new messages are measured.
   */
  private sizeOf(messages: readonly object[]): number {
    const previous = this.measured
    let start = 0
    let sum = 0
    if (
      previous &&
      previous.count <= messages.length &&
      messages[0] === previous.first &&
      messages[previous.count - 1] === previous.last
    ) {
      start = previous.count
      sum = previous.sum
    }
    for (let i = start; i < messages.length; i++) sum += JSON.stringify(messages[i]).length
    this.measured = messages.length
      ? { count: messages.length, sum, first: messages[0]!, last: messages[messages.length - 1]! }
      : undefined
    return sum + 2 + Math.max(0, messages.length - 1)
  }
}

/** Splits text into word-sized pieces so a scripted reply streams like a real one. */
function pieces(text: string): string[] {
  return text.match(/\S+\s*|\s+/g) ?? [text]
}
