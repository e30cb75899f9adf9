import { createRequire } from 'node:module'
import { join } from 'node:path'
import { Context } from 'cordis'
import * as toolsPlugin from '@keel/tools'
import { quietCordisLogger } from '../../cli/src/boot.ts'
import * as mcpPlugin from '../src/index.ts'
import { waitFor } from '../../../test-support/harness.ts'

const require = createRequire(import.meta.url)

/** The published `server-everything` over stdio, as a user would configure it. */
export const EVERYTHING = {
  command: process.execPath,
  args: [require.resolve('@modelcontextprotocol/server-everything/dist/index.js'), 'stdio'],
}

export const FAULTY = { command: process.execPath, args: [join(import.meta.dirname, 'fixtures/faulty-server.mjs')] }

export interface Booted {
  ctx: Context
  warnings: string[]
  stop(): Promise<void>
}

/** A context with just the tool registry and the MCP plugin. */
export async function bootMcp(config: Partial<mcpPlugin.Config>): Promise<Booted> {
  quietCordisLogger()
  const ctx = new Context()
  const warnings: string[] = []
  ctx.on('keel/notice', (notice) => {
    if (notice.source === 'mcp') warnings.push(notice.text)
  })
  ctx.plugin(toolsPlugin)
  ctx.plugin(mcpPlugin, {
    projectFile: false,
    startTimeoutMs: 20_000,
    callTimeoutMs: 20_000,
    maxResultChars: 25_000,
    servers: {},
    ...config,
  })
  await ctx.start()
  await waitFor(() => ctx.get('mcp') && ctx.get('tools'), 'mcp service')
  return { ctx, warnings, stop: () => ctx.stop().catch(() => {}) }
}

export function textOf(result: { content: { type: string; text?: string }[] }): string {
  return result.content.map((block) => (block.type === 'text' ? block.text : '')).join('')
}

/** The hostile server of fixtures/hostile-server.mjs in one of its modes. */
export function hostile(mode: string, env?: Record<string, string>) {
  return {
    command: process.execPath,
    args: [join(import.meta.dirname, 'fixtures/hostile-server.mjs'), mode],
    ...(env ? { env } : {}),
  }
}
