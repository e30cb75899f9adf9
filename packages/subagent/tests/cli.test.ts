import { execFile } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { afterAll, beforeAll, describe, expect, test, vi } from 'vitest'
import { main } from '@keel/cli'

const run = promisify(execFile)
const KEEL = fileURLToPath(new URL('../../../bin/keel.js', import.meta.url))

let dir: string
let env: NodeJS.ProcessEnv
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'keel-subagent-cli-'))
  env = { ...process.env, KEEL_HOME: join(dir, 'home') }
  delete env.KEEL_MODEL
})
afterAll(() => rmSync(dir, { recursive: true, force: true }))

function keel(...args: string[]) {
  const running = run(process.execPath, [KEEL, ...args], { env, cwd: dir, timeout: 60_000 })
  // stdin as a CI job has it: an open pipe that never writes costs `-p` its 2 s wait for piped text.
  running.child.stdin?.end()
  return running
}

/** The same CLI in-process (no second cold start): what it writes to stdout. */
async function keelHere(...args: string[]): Promise<string> {
  const previous = process.env.KEEL_HOME
  process.env.KEEL_HOME = env.KEEL_HOME
  const out: string[] = []
  const spy = vi.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => {
    out.push(String(chunk))
    return true
  })
  try {
    expect(await main(args)).toBe(0)
  } finally {
    spy.mockRestore()
    if (previous === undefined) delete process.env.KEEL_HOME
    else process.env.KEEL_HOME = previous
  }
  return out.join('')
}

describe('keel binary with the shipped composition', () => {
  test('print mode fans out; sessions list --all shows each child under its parent; sessions show opens a child', async () => {
    const script = join(dir, 'fan-out.json')
    writeFileSync(
      script,
      JSON.stringify({
        steps: [
          {
            when: 'PARENT',
            toolCalls: [
              { name: 'task', arguments: { description: 'Count files', prompt: 'CHILD-C: count the files' } },
            ],
          },
          {
            when: 'CHILD-C',
            toolCalls: [
              { name: 'todo_write', arguments: { todos: [{ content: 'Count files', status: 'completed' }] } },
            ],
          },
          { when: 'CHILD-C', text: 'There are 2 files.' },
          { when: 'PARENT', text: 'The subagent counted 2 files.' },
        ],
      }),
    )
    const printed = await keel(
      '-p',
      'PARENT: how many files?',
      '--model',
      `scripted/${script}`,
      '--cwd',
      dir,
      '--output-format',
      'json',
    )
    const answer = JSON.parse(printed.stdout) as { sessionId: string; reason: string; text: string; toolCalls: number }
    expect(answer).toMatchObject({ reason: 'completed', text: 'The subagent counted 2 files.', toolCalls: 1 })

    const listed = (await keel('sessions', 'list', '--all')).stdout.trimEnd().split('\n')
    expect(listed).toHaveLength(2)
    expect(listed[0]).toMatch(/^[\w-]+ {2}.* {2}PARENT: how many files\?/)
    expect(listed[1]).toMatch(/^ {2}└ [\w-]+ {2}.* {2}CHILD-C: count the files$/)
    const parentId = listed[0]!.split(' ')[0]!
    const childId = listed[1]!.trim().split(' ')[1]!
    expect(answer.sessionId).toBe(parentId)

    const scoped = (await keelHere('sessions', 'list', '--cwd', dir)).trimEnd().split('\n')
    expect(scoped).toHaveLength(2)
    expect(scoped[1]).toContain(`└ ${childId}`)

    const shown = await keelHere('sessions', 'show', childId)
    expect(shown).toContain(`Session ${childId}`)
    expect(shown).toMatch(new RegExp(`parent +${parentId} \\(call `))
    expect(shown).toContain('Plan 1/1')
    expect(shown).toContain('✓ Count files')
  })
})
