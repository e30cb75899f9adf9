import { type Context, Service } from 'cordis'
import Schema from 'schemastery'
import type { ToolSchema } from '@keel/llm'
import { stripTerminalCodes } from '@keel/session/text'
import {
  errorResult,
  type SandboxLevel,
  type ToolAccess,
  type ToolAgent,
  type ToolCallView,
  type ToolContent,
  type ToolDefinition,
  type ToolExecution,
  type ToolResult,
} from './define.ts'
import { compileValidator, type Validator } from './validate.ts'

export * from './define.ts'
export type { Authorization, CallToAuthorize, HostToAuthorize, PermissionGate } from './gate.ts'
export { Type } from './type.ts'
export { compileValidator, pathOf, summarize, type Validator } from './validate.ts'

declare module 'cordis' {
  interface Context {
    tools: ToolRegistry
  }
}

export interface ExecuteInput {
  callId: string
  name: string
  /** The raw JSON text the model sent, or an already parsed value. */
  arguments: unknown
  agent?: ToolAgent
  signal: AbortSignal
  onUpdate?: (text: string) => void
  /** Passed to the tool as `ToolExecution.sandbox`. */
  sandbox?: SandboxLevel
  /** Passed to the tool as `ToolExecution.network`. */
  network?: ToolExecution['network']
}

interface Entry {
  definition: ToolDefinition
  validate: Validator
}

/** `ctx.tools`: the registry the loop asks for schemas and sends calls to. `execute` never throws. */
export class ToolRegistry extends Service {
  private readonly entries = new Map<string, Entry>()

  constructor(ctx: Context) {
    super(ctx, 'tools', true)
  }

  /** A disposable effect: disposing the registering plugin removes the tool. */
  // biome-ignore lint/suspicious/noExplicitAny: a tool's parameters are contravariant in execute(); any schema may register
  register(definition: ToolDefinition<any>): () => void {
    return this.ctx.effect(() => {
      if (this.entries.has(definition.name)) throw new Error(`tool ${definition.name} is already registered`)
      this.entries.set(definition.name, { definition, validate: compileValidator(definition.parameters) })
      return () => this.entries.delete(definition.name)
    })
  }

  get(name: string): ToolDefinition | undefined {
    return this.entries.get(name)?.definition
  }

  names(): string[] {
    return [...this.entries.keys()]
  }

  /**
   * Whether an agent that excludes `except` may not use `name`: it is excluded, or it goes only with a tool that is
   * (`offeredWith`: the job tools with `bash`). One rule for what the model is offered and what it may call.
   */
  excluded(name: string, except: readonly string[]): boolean {
    if (except.includes(name)) return true
    const companion = this.get(name)?.offeredWith
    return companion !== undefined && (except.includes(companion) || !this.entries.has(companion))
  }

  /** What the model is sent: name, description and the JSON Schema, nothing else. `except` hides tools by name. */
  schemas(except: readonly string[] = []): ToolSchema[] {
    const out: ToolSchema[] = []
    for (const { definition } of this.entries.values()) {
      if (this.excluded(definition.name, except)) continue
      out.push({ name: definition.name, description: definition.description, parameters: definition.parameters })
    }
    return out
  }

  /** Parses and validates raw arguments; a string describes what is wrong. */
  parse(name: string, raw: unknown): { args: unknown } | { error: string } {
    const entry = this.entries.get(name)
    if (!entry) return { error: `unknown tool ${JSON.stringify(name)}; available: ${this.names().join(', ')}` }
    let args = raw
    if (typeof raw === 'string') {
      try {
        args = raw.trim() === '' ? {} : JSON.parse(raw)
      } catch (error) {
        return { error: `arguments are not valid JSON (${(error as Error).message})` }
      }
    }
    const violations = entry.validate(args)
    if (violations.length) {
      const help = entry.definition.argumentsHelp
      return { error: `invalid arguments:\n${violations.join('\n')}${help ? `\n${help}` : ''}` }
    }
    return { args }
  }

  /** `presentCall` for UIs; falls back to the tool name when the arguments do not validate. */
  present(name: string, raw: unknown): ToolCallView {
    const parsed = this.parse(name, raw)
    const definition = this.get(name)
    if ('args' in parsed && definition?.presentCall) {
      try {
        return definition.presentCall(parsed.args as never)
      } catch {}
    }
    return { title: name, kind: 'other', rawInput: 'args' in parsed ? parsed.args : raw }
  }

  /**
   * What a call would touch, from the tool's `access` (`{ kind: 'other' }` when it declares none). Undefined when
   * the call does not parse: such a call never runs, so there is nothing to decide.
   */
  access(name: string, raw: unknown, cwd: string): ToolAccess | undefined {
    const parsed = this.parse(name, raw)
    if ('error' in parsed) return undefined
    const definition = this.get(name)!
    if (!definition.access) return { kind: 'other' }
    try {
      return definition.access(parsed.args as never, cwd)
    } catch {
      return { kind: 'other' }
    }
  }

  isConcurrencySafe(name: string): boolean {
    return this.get(name)?.concurrencySafe === true
  }

  async execute(input: ExecuteInput): Promise<ToolResult> {
    const parsed = this.parse(input.name, input.arguments)
    if ('error' in parsed) return errorResult(parsed.error)
    if (input.signal.aborted) return errorResult('tool call aborted before it started')
    const definition = this.get(input.name)!
    try {
      const output = await definition.execute(parsed.args as never, {
        callId: input.callId,
        agent: input.agent,
        signal: input.signal,
        onUpdate: input.onUpdate,
        ...(input.sandbox ? { sandbox: input.sandbox } : {}),
        ...(input.network ? { network: input.network } : {}),
      })
      // Terminal codes never reach the model or the log: every tool's output is cleaned here, once.
      if (typeof output === 'string')
        return { isError: false, content: [{ type: 'text', text: stripTerminalCodes(output) }] }
      return {
        isError: output.isError === true,
        content: plainContent(output.content),
        ...(output.details ? { details: output.details } : {}),
      }
    } catch (error) {
      if (input.signal.aborted) return errorResult('tool call aborted')
      return errorResult(error instanceof Error ? error.message : String(error))
    }
  }
}

function plainContent(content: ToolContent): ToolContent {
  return content.map((block) => (block.type === 'text' ? { ...block, text: stripTerminalCodes(block.text) } : block))
}

export const name = 'keel-tools'
export interface Config {}
export const Config: Schema<Config> = Schema.object({})

export function apply(ctx: Context): void {
  ctx.plugin(ToolRegistry)
}
