// KNOWN DEFECT, kept as `test.fails` until it is fixed (then it fails, and `.fails` goes): the runtime has bubblewrap
// make an empty file or folder on the host for each absent protected name in the cwd (`.bashrc`, `.keel`, `.mcp.json`,
// `.vscode`, … 14 of them), as mount points for the read-only binds, for as long as a workspace command runs. They
// are removed by the wrap's dispose, or by the runtime's process 'exit' handler; a Keel process killed by SIGKILL (or
// by any signal it does not handle) during a command leaves them all behind, in the person's folder. With the session
// cwd at /tmp they appear in /tmp, where every process sees them while the command runs.
import { spawn } from 'node:child_process'
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { homedir } from 'node:os'
import { join } from 'node:path'
import { afterAll, expect, test } from 'vitest'
import { startFakeProvider } from '../../../test-support/fake-provider.ts'
import { waitFor } from '../../../test-support/harness.ts'
import { IN_CI } from '../../../test-support/system-tools.ts'

const root = join(import.meta.dirname, '../../..')
const scratch = mkdtempSync(join(homedir(), '.keel-placeholders-test-'))
afterAll(() => rmSync(scratch, { recursive: true, force: true }))

/** Runs `sleep 30` sandboxed through `keel -p` in a new folder, and SIGKILLs keel once the command runs. */
async function killedDuringCommand(): Promise<string> {
  const cwd = mkdtempSync(join(scratch, 'work-'))
  const fake = await startFakeProvider([{ toolCalls: [{ name: 'bash', arguments: { command: 'sleep 30' } }] }])
  const keel = spawn(
    process.execPath,
    [
      join(root, 'bin/keel.js'),
      '-p',
      'go',
      '--mode',
      'auto',
      '--model',
      'openai-compatible/x',
      '--base-url',
      `${fake.url}/v1`,
    ],
    { cwd, env: { ...process.env, KEEL_HOME: join(scratch, 'home') }, stdio: 'ignore' },
  )
  const closed = new Promise((done) => keel.on('close', done))
  try {
    await waitFor(() => readdirSync(cwd).includes('.bashrc'), 'the sandboxed command to start', 30_000)
  } finally {
    keel.kill('SIGKILL')
    await closed
    await fake.close()
  }
  return cwd
}

/**
 * The command's bwrap, which outlives the SIGKILLed keel (reparented to init, with the runtime's socat relays inside:
 * seen running for minutes, another defect), so that this test leaves nothing running.
 */
function killSandboxOf(cwd: string): void {
  for (const pid of readdirSync('/proc').filter((name) => /^\d+$/.test(name))) {
    try {
      if (readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(cwd)) process.kill(Number(pid), 'SIGKILL')
    } catch {}
  }
}

test.runIf(IN_CI).fails('a keel killed during a sandboxed command leaves no placeholder in its cwd', async () => {
  const cwd = await killedDuringCommand()
  try {
    expect(readdirSync(cwd)).toEqual([])
  } finally {
    killSandboxOf(cwd)
  }
})
