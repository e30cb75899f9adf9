// The scripted scenario the loop benches share (gap.bench.ts, peer.bench.ts): a small committed repository to run
// in, and the steps a scripted model answers with. A step is the scripted adapter's shape, which is also
// test-support/fake-provider.ts's reply shape, so the same steps drive `--model scripted/…` and a model on the wire.
import { spawnSync } from 'node:child_process'
import { mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'

export type Step = {
  toolCalls?: { name: string; arguments: Record<string, unknown> }[]
  text?: string
  reasoning?: string
  delayMs?: number
}

/** Ten small files, committed: enough for the checkpoint to have a tree, small enough to cost nothing. */
export function makeRepo(dir: string): void {
  mkdirSync(dir, { recursive: true })
  for (let i = 0; i < 10; i++) writeFileSync(join(dir, `f${i}.ts`), `export const x${i} = ${i}\n`)
  spawnSync('git', ['init', '-q'], { cwd: dir })
  spawnSync('git', ['add', '-A'], { cwd: dir })
  spawnSync('git', ['-c', 'user.email=b@b', '-c', 'user.name=b', 'commit', '-qm', 'init'], { cwd: dir })
}

export const todo = (i: number): Step => ({
  toolCalls: [{ name: 'todo_write', arguments: { todos: [{ content: `step ${i}`, status: 'in_progress' }] } }],
})
export const bash = (i: number): Step => ({ toolCalls: [{ name: 'bash', arguments: { command: `echo hello ${i}` } }] })
export const answer: Step = { text: 'Done.' }
