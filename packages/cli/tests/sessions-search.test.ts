import { spawnSync } from 'node:child_process'
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, test } from 'vitest'
import type { SessionSummary } from '@keel/session'
import { searchSessions } from '../src/sessions-search.ts'

const root = join(import.meta.dirname, '../../..')
const scratch = mkdtempSync(join(tmpdir(), 'keel-search-'))
afterAll(() => rmSync(scratch, { recursive: true, force: true }))

function keel(args: string[], home: string, cwd: string) {
  return spawnSync(process.execPath, [join(root, 'bin/keel.js'), ...args], {
    cwd,
    env: { ...process.env, KEEL_HOME: home },
    encoding: 'utf8',
    input: '',
    timeout: 120_000,
  })
}

function script(name: string, steps: unknown[]): string {
  const path = join(scratch, `${name}.json`)
  writeFileSync(path, JSON.stringify({ steps }))
  return `scripted/${path}`
}

/** A session file as the store writes it: the header line, then one event a line. */
function sessionFile(dir: string, id: string, events: unknown[]): SessionSummary {
  const path = join(dir, `${id}.jsonl`)
  const header = { type: 'session', version: 1, id, createdAt: 1, cwd: dir }
  writeFileSync(path, `${[header, ...events].map((line) => JSON.stringify(line)).join('\n')}\n`)
  return { id, cwd: dir, createdAt: 1, updatedAt: 1, path, title: id }
}

const user = (seq: number, text: string, source?: string) => ({
  type: 'user/message',
  seq,
  time: 1,
  data: { message: { role: 'user', content: [{ type: 'text', text }], ...(source ? { source } : {}) } },
  surfaceOp: { op: 'append' },
})

describe('keel sessions search', () => {
  test('finds prompts, answers and plan items, case-insensitively, and lists an unreadable file', async () => {
    const dir = join(scratch, 'unit')
    mkdirSync(dir)
    const a = sessionFile(dir, 'aaaa', [
      user(0, 'Fix the Flaky test'),
      {
        type: 'todo/write',
        seq: 1,
        time: 1,
        data: { todos: [{ content: 'rerun the flaky suite', status: 'pending' }] },
      },
      {
        type: 'assistant/message',
        seq: 2,
        time: 1,
        data: {
          turn: 1,
          step: 1,
          message: { role: 'assistant', content: [{ type: 'text', text: 'It was "flaky" "' }] },
        },
      },
      user(3, 'flaky in a compaction summary', 'compaction'),
      '{"type": torn',
    ])
    const b = sessionFile(dir, 'bbbb', [user(0, 'nothing to see')])
    const gone: SessionSummary = { ...b, id: 'cccc', path: join(dir, 'missing.jsonl') }
    const result = await searchSessions([a, b, gone], 'FLAKY')
    expect(result.hits.map((hit) => hit.summary.id)).toEqual(['aaaa'])
    expect(result.hits[0]!.count).toBe(3)
    expect(result.hits[0]!.matches.map((match) => [match.seq, match.where])).toEqual([
      [0, 'prompt'],
      [1, 'plan'],
      [2, 'answer'],
    ])
    expect(result.unreadable).toEqual([{ summary: gone, problem: 'ENOENT' }])
    // A needle JSON escapes (a quote) is still found: those lines are parsed instead of pre-filtered.
    expect((await searchSessions([a], '"flaky"')).hits[0]?.matches[0]?.where).toBe('answer')
  })

  test('through the CLI: a word from a plan item, --json, and --all across directories', () => {
    const home = join(scratch, 'home')
    const cwd = mkdtempSync(join(scratch, 'proj-'))
    const other = mkdtempSync(join(scratch, 'other-'))
    const planned = keel(
      [
        '-p',
        'tidy up',
        '--output-format',
        'json',
        '--model',
        script('plan', [
          {
            toolCalls: [
              {
                name: 'todo_write',
                arguments: { todos: [{ content: 'Rename the \u001b[31mwidget module', status: 'in_progress' }] },
              },
            ],
          },
          { text: 'Done.' },
        ]),
      ],
      home,
      cwd,
    )
    expect(planned.status, planned.stderr).toBe(0)
    const id = JSON.parse(planned.stdout).sessionId
    expect(keel(['-p', 'something else', '--model', script('plain', [{ text: 'ok' }])], home, cwd).status).toBe(0)
    expect(keel(['-p', 'widget elsewhere', '--model', script('elsewhere', [{ text: 'ok' }])], home, other).status).toBe(
      0,
    )

    const found = keel(['sessions', 'search', 'widget'], home, cwd)
    expect(found.status, found.stderr).toBe(0)
    const lines = found.stdout.trimEnd().split('\n')
    expect(lines[0]).toMatch(new RegExp(`^${id}  \\d{4}-\\d\\d-\\d\\d \\d\\d:\\d\\d  tidy up$`))
    // The escape code from the log is shown escaped, never sent to the terminal.
    expect(lines[1]).toBe('    plan   Rename the ␛[31mwidget module')
    expect(lines).toHaveLength(2)

    const json = JSON.parse(keel(['sessions', 'search', 'widget', '--json'], home, cwd).stdout)
    expect(json.hits.map((hit: { summary: { id: string } }) => hit.summary.id)).toEqual([id])
    const all = keel(['sessions', 'search', 'widget', '--all'], home, cwd).stdout
    expect(all.match(/^\S+ {2}\d{4}/gm)).toHaveLength(2)
    expect(keel(['sessions', 'search', 'no-such-word'], home, cwd).stdout).toBe('No session mentions "no-such-word".\n')
    expect(keel(['sessions', 'search'], home, cwd).stderr).toMatch(/usage: keel sessions/)
  })
})
