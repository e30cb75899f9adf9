import { afterEach, describe, expect, test } from 'vitest'
import { CappedOutput } from '@keel/shell'
import { makeKeel, textOfContent, type Keel } from '../../../test-support/harness.ts'
import { killQuietly, pidsIn, waitUntilGone } from '../../../test-support/processes.ts'

let keel: Keel | undefined
afterEach(async () => {
  await keel?.dispose()
  keel = undefined
})

async function run(args: unknown, signal = new AbortController().signal) {
  keel ??= await makeKeel()
  const agent = keel.agent({ persist: false })
  const result = await keel.ctx.tools.execute({
    callId: 'c',
    name: 'bash',
    arguments: JSON.stringify(args),
    agent,
    signal,
  })
  return { ...result, text: textOfContent(result.content), cwd: keel.cwd }
}

describe('bash', () => {
  test('runs in the agent cwd, interleaves stdout and stderr, reports the exit code', async () => {
    const result = await run({ command: 'pwd; echo out; echo err >&2; exit 3' })
    expect(result.isError).toBe(false)
    expect(result.text).toMatch(new RegExp(`^${result.cwd}\\nout\\nerr\\n\\[exit code 3 · [0-9.]+ s\\]$`))
  })

  test('a timeout kills the whole process group (the shell and a background child) and says so', async () => {
    const result = await run({ command: 'sleep 30 & echo $!; echo $$; sleep 30; echo never', timeout: 1 })
    const pids = pidsIn(result.text)
    try {
      expect(result.isError).toBe(true)
      expect(result.text).toMatch(/^\d+\n\d+\n\[killed after the 1 s timeout\]$/)
      expect(pids).toHaveLength(2)
      await waitUntilGone(pids)
    } finally {
      killQuietly(pids)
    }
  })

  test('long output keeps its head and tail and says how much was cut', async () => {
    const result = await run({ command: 'seq 1 100000' })
    expect(result.text.startsWith('1\n2\n3\n')).toBe(true)
    expect(result.text).toMatch(/… \[\d+ characters of output cut\] …/)
    expect(result.text).toMatch(/\n100000\n\[exit code 0/)
    expect(result.text.length).toBeLessThan(17_000)
  })

  test('bad arguments are an isError result', async () => {
    const result = await run({ command: 'ls', timeout: 'soon' })
    expect(result.isError).toBe(true)
    expect(result.text).toMatch(/timeout: must be a number/)
  })

  test('presentCall shows the command as an execute card', async () => {
    keel = await makeKeel()
    expect(keel.ctx.tools.present('bash', '{"command":"npm test"}')).toEqual({
      title: 'npm test',
      kind: 'execute',
      rawInput: { command: 'npm test' },
    })
  })

  test('CappedOutput counts what it drops', () => {
    const out = new CappedOutput(3, 3)
    out.push('abcdefghij')
    expect(out.truncated).toBe(4)
    expect(out.text()).toBe('abc\n… [4 characters of output cut] …\nhij')
  })
})
