// A whole Keel in-process for tests: the real plugins on a fresh cordis Context, dev invariants on, a temp
// KEEL_HOME, and the scripted model. Nothing here is a mock of Keel's own parts.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Context } from 'cordis'
import * as agentPlugin from '@keel/agent'
import { quietCordisLogger } from '../packages/cli/src/boot.ts'
import type { Agent, CreateAgentOptions } from '@keel/agent'
import * as llmPlugin from '@keel/llm'
import { ScriptedAdapter, type ScriptStep } from '@keel/llm'
import * as sessionPlugin from '@keel/session'
import * as devPlugin from '@keel/session/dev'
import * as shellPlugin from '@keel/shell'
import * as todoPlugin from '@keel/todo'
import * as toolsPlugin from '@keel/tools'

export interface KeelOptions {
  steps?: ScriptStep[]
  todo?: { allowParallelInProgress?: boolean } | false
  shell?: boolean
  dev?: boolean
  /** More plugins to load after the core, as [module, config]. */
  plugins?: [unknown, unknown?][]
  contextWindow?: number
  /** Keep copies of every request the model is sent (default true). */
  recordRequests?: boolean
}

export interface Keel {
  ctx: Context
  model: ScriptedAdapter
  home: string
  cwd: string
  agent(options?: Partial<CreateAgentOptions>): Agent
  dispose(): Promise<void>
}

export async function waitFor(check: () => unknown, what = 'condition', timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise((done) => setTimeout(done, 5))
  }
}

export async function makeKeel(options: KeelOptions = {}): Promise<Keel> {
  const home = mkdtempSync(join(tmpdir(), 'keel-test-'))
  const cwd = mkdtempSync(join(tmpdir(), 'keel-cwd-'))
  const previousHome = process.env.KEEL_HOME
  process.env.KEEL_HOME = home
  quietCordisLogger()
  const ctx = new Context()
  ctx.plugin(sessionPlugin)
  if (options.dev !== false) ctx.plugin(devPlugin)
  ctx.plugin(llmPlugin, { retryAttempts: 2, retryBaseDelayMs: 5 })
  ctx.plugin(toolsPlugin)
  ctx.plugin(agentPlugin, { maxSteps: 50 })
  if (options.shell !== false) ctx.plugin(shellPlugin)
  if (options.todo !== false) ctx.plugin(todoPlugin, { allowParallelInProgress: false, ...(options.todo || {}) })
  for (const [plugin, config] of options.plugins ?? []) ctx.plugin(plugin as never, config)
  await ctx.start()
  await waitFor(() => ctx.get('agents') && ctx.get('tools') && ctx.get('sessions'), 'keel services')
  await ctx.lifecycle.flush()
  const model = new ScriptedAdapter({ steps: options.steps ?? [] }, 'script', options.contextWindow, {
    record: options.recordRequests,
  })
  return {
    ctx,
    model,
    home,
    cwd,
    agent: (extra = {}) => ctx.agents.create({ cwd, model, ...extra }),
    async dispose() {
      await ctx.stop().catch(() => {})
      if (previousHome === undefined) delete process.env.KEEL_HOME
      else process.env.KEEL_HOME = previousHome
      rmSync(home, { recursive: true, force: true })
      rmSync(cwd, { recursive: true, force: true })
    },
  }
}

/** The text of a tool result event or message content. */
export function textOfContent(content: readonly { type: string; text?: string }[]): string {
  return content.map((block) => (block.type === 'text' ? block.text : '')).join('')
}
