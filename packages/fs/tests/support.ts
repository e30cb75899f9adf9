// A real Keel (makeKeel: session, tools, agent, dev invariants) with the fs plugin, and a helper that sends one
// call through the real `ctx.tools.execute` as the agent whose cwd is the temp directory.
import { mkdirSync, writeFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import type { ToolResult } from '@keel/tools'
import * as fsPlugin from '@keel/fs'
import { makeKeel, textOfContent, type Keel } from '../../../test-support/harness.ts'

export interface FsKeel {
  keel: Keel
  cwd: string
  call(name: string, args: unknown, signal?: AbortSignal): Promise<ToolResult>
  /** The text of a call's result, and whether it was an error. */
  run(name: string, args: unknown): Promise<{ text: string; isError: boolean }>
  put(path: string, content: string | Buffer): string
  dispose(): Promise<void>
}

/**
 * grep and glob run the system ripgrep when there is one and walk and read themselves otherwise: a suite about what
 * they find runs once per way (`describe.each`), each keel made with the config given here.
 */
export const SEARCH_WAYS: [string, Partial<fsPlugin.Config>][] = [
  ['through ripgrep', { ripgrep: 'rg' }],
  ["with Keel's own walk (no ripgrep)", { ripgrep: '' }],
]

export async function fsKeel(config: Partial<fsPlugin.Config> = {}): Promise<FsKeel> {
  const keel = await makeKeel({ plugins: [[fsPlugin, config]], shell: false, todo: false })
  const agent = keel.agent({ persist: false })
  let seq = 0
  const call = (name: string, args: unknown, signal = new AbortController().signal) =>
    keel.ctx.tools.execute({
      callId: `call_${++seq}`,
      name,
      arguments: JSON.stringify(args),
      agent,
      signal,
    })
  return {
    keel,
    cwd: keel.cwd,
    call,
    async run(name, args) {
      const result = await call(name, args)
      return { text: textOfContent(result.content), isError: result.isError }
    },
    put(path, content) {
      const full = join(keel.cwd, path)
      mkdirSync(dirname(full), { recursive: true })
      writeFileSync(full, content)
      return full
    },
    dispose: () => keel.dispose(),
  }
}
