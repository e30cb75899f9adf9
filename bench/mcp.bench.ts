// What one MCP server costs the start: spawn → first model request with one stdio server configured (the published
// server-everything, in a project .mcp.json), as a ratio to the same run with none. Medians; nothing is asserted.
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

async function firstRequest(cwd: string): Promise<number> {
  const fake = await startFakeProvider([{ text: 'ok' }])
  const started = Date.now()
  const child = spawn(
    process.execPath,
    [keelBin, '-p', 'hi', '--model', 'openai-compatible/bench', '--base-url', `${fake.url}/v1`],
    {
      cwd,
      env: { ...process.env, KEEL_HOME: join(scratch, 'home') },
      stdio: 'ignore',
    },
  )
  await new Promise((done) => child.on('close', done))
  const at = fake.requests[0]?.at
  await fake.close()
  return at === undefined ? NaN : at - started
}

const everything = createRequire(import.meta.url).resolve('@modelcontextprotocol/server-everything/dist/index.js')
const none = project({})
const one = project({ everything: { command: process.execPath, args: [everything, 'stdio'] } })
const without: number[] = []
const withOne: number[] = []
for (let i = 0; i < RUNS; i++) {
  without.push(await firstRequest(none))
  withOne.push(await firstRequest(one))
}
row('keel -p: spawn → first request, no MCP server', ms(median(without)))
row('keel -p: … with one stdio MCP server', ms(median(withOne)), ratio(median(withOne), median(without)), 'vs none')
rmSync(scratch, { recursive: true, force: true })
