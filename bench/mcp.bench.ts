// What one MCP server costs a `keel -p` run: spawn → first model request, and spawn → exit, with one stdio server
// configured (the published server-everything, in a trusted project .mcp.json), as ratios to the same run with none.
// server-everything does not exit when its stdin closes, so the exit figure includes Keel's stop of it (stop.ts).
// Medians; nothing is asserted.
import { spawn } from 'node:child_process'
import { createRequire } from 'node:module'
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { startFakeProvider } from '../test-support/fake-provider.ts'
import { median, ms, ratio, row } from './stats.ts'

const root = fileURLToPath(new URL('..', import.meta.url))
const keelBin = join(root, 'bin/keel.js')
const scratch = mkdtempSync(join(tmpdir(), 'keel-bench-mcp-'))
const RUNS = 5

function project(servers: Record<string, unknown>): string {
  const dir = mkdtempSync(join(scratch, 'p-'))
  mkdirSync(join(dir, '.git'))
  writeFileSync(join(dir, '.mcp.json'), JSON.stringify({ mcpServers: servers }))
  return dir
}

async function timed(cwd: string): Promise<{ request: number; exit: number }> {
  const fake = await startFakeProvider([{ text: 'ok' }])
  const started = Date.now()
  const child = spawn(
    process.execPath,
    [keelBin, '-p', 'hi', '--trust', '--model', 'openai-compatible/bench', '--base-url', `${fake.url}/v1`],
    {
      cwd,
      env: { ...process.env, KEEL_HOME: join(scratch, 'home') },
      stdio: 'ignore',
    },
  )
  await new Promise((done) => child.on('close', done))
  const exit = Date.now() - started
  const at = fake.requests[0]?.at
  await fake.close()
  return { request: at === undefined ? NaN : at - started, exit }
}

const everything = createRequire(import.meta.url).resolve('@modelcontextprotocol/server-everything/dist/index.js')
const none = project({})
const one = project({ everything: { command: process.execPath, args: [everything, 'stdio'] } })
const without: { request: number; exit: number }[] = []
const withOne: { request: number; exit: number }[] = []
for (let i = 0; i < RUNS; i++) {
  without.push(await timed(none))
  withOne.push(await timed(one))
}
for (const key of ['request', 'exit'] as const) {
  const base = median(without.map((run) => run[key]))
  const value = median(withOne.map((run) => run[key]))
  const what = key === 'request' ? 'first request' : 'exit'
  row(`keel -p: spawn → ${what}, no MCP server`, ms(base))
  row('keel -p: … with one stdio MCP server', ms(value), ratio(value, base), 'vs none')
}
rmSync(scratch, { recursive: true, force: true })
