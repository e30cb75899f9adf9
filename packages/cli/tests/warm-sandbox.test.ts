// The sandbox starts while the model thinks (src/warm-sandbox.ts): in a mode that sandboxes commands, the runtime's
// bridges (socat children of keel) are up during the first request, before any tool call; in yolo mode they never
// start. Real `keel -p`, a scripted model that takes its time, the system's bubblewrap and socat.
import { spawn } from 'node:child_process'
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, expect, test } from 'vitest'
import { HAS_BWRAP, skipWithout } from '../../../test-support/system-tools.ts'

const root = join(import.meta.dirname, '../../..')
const scratch = mkdtempSync(join(tmpdir(), 'keel-warm-sandbox-'))
afterAll(() => rmSync(scratch, { recursive: true, force: true }))

/** The commands of `pid`'s children, read from /proc. */
function childCommands(pid: number): string[] {
  const out: string[] = []
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8')
      if (Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]) !== pid) continue
      out.push(readFileSync(`/proc/${name}/cmdline`, 'utf8').split('\0').join(' '))
    } catch {}
  }
  return out
}

/** Runs `keel -p` whose one answer takes a few seconds; resolves with whether a socat child was seen meanwhile. */
async function bridgesDuringTheRequest(mode: string): Promise<boolean> {
  const cwd = join(scratch, mode)
  mkdirSync(cwd, { recursive: true })
  const script = join(cwd, 'slow.json')
  writeFileSync(script, JSON.stringify({ steps: [{ text: 'thinking slowly, then done', delayMs: 400 }] }))
  const child = spawn(
    process.execPath,
    [join(root, 'bin/keel.js'), '-p', 'hi', '--model', `scripted/${script}`, '--mode', mode],
    {
      cwd,
      env: { ...process.env, KEEL_HOME: join(scratch, `${mode}-home`) },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  )
  let err = ''
  child.stderr.on('data', (chunk) => {
    err += chunk
  })
  let seen = false
  const timer = setInterval(() => {
    if (childCommands(child.pid!).some((command) => command.includes('socat'))) seen = true
  }, 25)
  const code = await new Promise((done) => child.on('close', done))
  clearInterval(timer)
  expect(code, err).toBe(0)
  return seen
}

test.skipIf(skipWithout('bubblewrap', HAS_BWRAP, 'the sandbox warm-up'))(
  'the sandbox bridges start during the first request in auto mode, and never in yolo mode',
  async () => {
    expect(await bridgesDuringTheRequest('auto')).toBe(true)
    expect(await bridgesDuringTheRequest('yolo')).toBe(false)
  },
  60_000,
)
