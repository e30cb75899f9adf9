import { afterEach, describe, expect, test } from 'vitest'
import { makeKeel, textOfContent, waitFor, type Keel } from '../../../test-support/harness.ts'
import { alive, killQuietly, pidsIn, waitUntilGone } from '../../../test-support/processes.ts'

let keel: Keel | undefined
const started: number[] = []
afterEach(async () => {
  killQuietly(started.splice(0))
  await keel?.dispose()
  keel = undefined
})

/** Runs one bash call; `live` collects what streamed to UIs, and `pids` every pid printed so far. */
async function bash(
  command: string,
  options: { timeout?: number; signal?: AbortSignal; onUpdate?: (text: string) => void } = {},
) {
  keel ??= await makeKeel()
  const agent = keel.agent({ persist: false })
  let live = ''
  const result = await keel.ctx.tools.execute({
    callId: 'c',
    name: 'bash',
    agent,
    signal: options.signal ?? new AbortController().signal,
    arguments: JSON.stringify({ command, ...(options.timeout ? { timeout: options.timeout } : {}) }),
    onUpdate: (text) => {
      live += text
      started.push(...pidsIn(text))
      options.onUpdate?.(live)
    },
  })
  return { ...result, text: textOfContent(result.content), pids: pidsIn(live) }
}

// Each command exits at once but leaves a process holding the output pipe open, in a different way. The call must
// return when the shell exits (the timeout is 600 s, far beyond the test's own), kill what was left and say so.
// `$!` names the background process; a process started further away writes its pid to ./pid itself, and the shell
// waits for that file so the process is surely running before the shell exits.
const AWAIT_PID = 'until [ -s pid ]; do sleep 0.01; done; cat pid'
const HOLDERS: Record<string, string> = {
  'a plain background job': 'sleep 100 & echo $!',
  nohup: 'nohup sleep 100 2>/dev/null & echo $!',
  disown: 'sleep 100 & echo $!; disown',
  'setsid (a new session and process group)': 'setsid sleep 100 & echo $!',
  'setsid --fork': `setsid -f sh -c 'echo $$ > pid; exec sleep 100'; ${AWAIT_PID}`,
  'a daemonizing double fork': `( ( setsid sh -c 'echo $$ > pid; exec sleep 100' & ) & ); ${AWAIT_PID}`,
  'stderr only': `setsid sh -c 'echo $$ > pid; exec sleep 100 >/dev/null' & ${AWAIT_PID}`,
  'a process that keeps writing': `setsid sh -c 'echo $$ > pid; while :; do echo tick; sleep 0.01; done' & ${AWAIT_PID}`,
}

describe('bash returns when the shell exits, whatever it left holding the pipes', () => {
  for (const [how, command] of Object.entries(HOLDERS)) {
    test(how, async () => {
      const result = await bash(command, { timeout: 600 })
      expect(result.isError, result.text).toBe(false)
      expect(result.text).toMatch(
        /\[exit code 0 · [\d.]+ s\]\n\[killed (\d+ background process(es)?|background processes) the command left running\]$/,
      )
      expect(result.pids.length).toBeGreaterThan(0)
      await waitUntilGone(result.pids)
    })
  }

  test('a command that leaves nothing behind says nothing about background processes', async () => {
    const result = await bash('sleep 0.1 & wait; echo done')
    expect(result.text).toMatch(/^done\n\[exit code 0 · [\d.]+ s\]$/)
  })

  test('the count names each process left running', async () => {
    const result = await bash(`sleep 100 & setsid sh -c 'echo $$ > pid; exec sleep 100' & ${AWAIT_PID}`, {
      timeout: 600,
    })
    expect(result.text).toMatch(/\[killed 2 background processes the command left running\]$/)
  })

  test('a process with threads counts once (its threads answer in /proc too)', async () => {
    // Node starts several threads at once; they get pids right after its own, where the scan reads.
    const node = JSON.stringify(process.execPath)
    const result = await bash(
      `setsid sh -c 'echo $$ > pid; exec ${node} -e "setTimeout(() => {}, 100000)"' & ${AWAIT_PID}; sleep 0.3`,
      { timeout: 600 },
    )
    expect(result.text).toMatch(/\[killed 1 background process the command left running\]$/)
  })
})

describe('the known limit: a process that left the group and cleared its environment', () => {
  test('is not found, but the call still returns when the shell exits and stops reading its output', async () => {
    // It ignores SIGPIPE: once the call stops reading, its next `echo` would otherwise kill it, and whether it was
    // still alive at the check below would be a race (it failed that way under load).
    const result = await bash(
      `env -i /usr/bin/setsid /bin/sh -c 'trap "" PIPE; echo $$ > pid; while :; do echo tick; sleep 0.01; done' & ${AWAIT_PID}`,
      { timeout: 600 },
    )
    expect(result.isError).toBe(false)
    expect(result.text).toMatch(/\[exit code 0 · [\d.]+ s\]$/)
    expect(alive(result.pids[0]!)).toBe(true)
  })
})

describe('the timeout holds in every case', () => {
  test('a shell that keeps running while an escaped process holds the pipe', async () => {
    const result = await bash('setsid sleep 100 & echo $!; sleep 100', { timeout: 1 })
    expect(result.isError).toBe(true)
    expect(result.text).toMatch(/\[killed after the 1 s timeout\]$/)
    await waitUntilGone(result.pids)
  })
})

describe('cancel and timeout kill grandchildren, not just the shell', () => {
  // `sleep` here is a grandchild of Keel: a plain kill of the shell would leave it running.
  for (const [how, command] of [
    ['in the group', 'sleep 300 & echo $!; wait'],
    ['escaped with setsid', 'setsid sleep 300 & echo $!; wait'],
  ] as const) {
    test(`cancel: a grandchild ${how}`, async () => {
      const controller = new AbortController()
      const running = bash(command, {
        timeout: 600,
        signal: controller.signal,
        onUpdate: (live) => {
          if (pidsIn(live).length) controller.abort()
        },
      })
      const result = await running
      expect(result.text).toBe(`${result.pids[0]}\n[cancelled by the user]`)
      expect(result.isError).toBe(true)
      await waitUntilGone(result.pids)
    })

    test(`timeout: a grandchild ${how}`, async () => {
      const result = await bash(command, { timeout: 1 })
      expect(result.text).toMatch(/\[killed after the 1 s timeout\]$/)
      await waitUntilGone(result.pids)
    })
  }

  test('the grandchild is really running before the cancel (the test can fail)', async () => {
    const controller = new AbortController()
    let seen: number[] = []
    const running = bash('sleep 300 & echo $!; wait', {
      timeout: 600,
      signal: controller.signal,
      onUpdate: (live) => {
        seen = pidsIn(live)
      },
    })
    await waitFor(() => seen.length, 'the grandchild pid')
    expect(alive(seen[0]!)).toBe(true)
    controller.abort()
    await running
    await waitUntilGone(seen)
  })
})
