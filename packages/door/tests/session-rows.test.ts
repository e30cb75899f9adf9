import { execFileSync } from 'node:child_process'
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Context } from 'cordis'
import { afterAll, beforeAll, expect, test } from 'vitest'
import * as sessionPlugin from '@keel/session'
import { cwdSlug } from '@keel/session'
import { filterRows, sessionRows } from '../src/session-rows.ts'
import { streamSessionLines } from '../src/session-lines.ts'

const scratch = mkdtempSync(join(tmpdir(), 'keel-rows-'))
const previousHome = process.env.KEEL_HOME
const cwd = join(scratch, 'project')
const dir = join(scratch, 'home', 'sessions', cwdSlug(cwd))
const ctx = new Context()

function session(id: string, time: number, events: [string, unknown][]) {
  const lines = [JSON.stringify({ type: 'session', version: 1, id, createdAt: time, cwd })]
  for (const [seq, [type, data]] of events.entries()) lines.push(JSON.stringify({ type, seq, time, data }))
  writeFileSync(join(dir, `${id}.jsonl`), `${lines.join('\n')}\n`)
  execFileSync('touch', ['-d', `@${time}`, join(dir, `${id}.jsonl`)])
}
const prompt = (text: string): [string, unknown] => [
  'user/message',
  { message: { role: 'user', content: [{ type: 'text', text }] } },
]
const answer = (usage?: unknown, costUsd?: number): [string, unknown] => [
  'assistant/message',
  {
    turn: 1,
    step: 1,
    message: { role: 'assistant', content: [{ type: 'text', text: '"type":"turn/start" in an answer' }] },
    ...(usage ? { usage } : {}),
    ...(costUsd !== undefined ? { costUsd } : {}),
  },
]

beforeAll(async () => {
  process.env.KEEL_HOME = join(scratch, 'home')
  mkdirSync(dir, { recursive: true })
  session('older', 1_000, [
    ['session/model', { spec: 'deepseek/deepseek-chat' }],
    ['turn/start', { turn: 1, trigger: 'prompt' }],
    prompt('fix the flaky parser test'),
    answer({ input: 1000, output: 100 }, 0.25),
    ['turn/end', { turn: 1, reason: 'completed' }],
    ['turn/start', { turn: 2, trigger: 'prompt' }],
    prompt('and the lexer'),
    answer({ input: 1000, output: 100 }, 0.17),
    ['turn/end', { turn: 2, reason: 'completed' }],
    ['session/model', { spec: 'anthropic/claude-sonnet-4-5' }],
  ])
  session('newer', 2_000, [
    ['turn/start', { turn: 1, trigger: 'prompt' }],
    prompt('write the release notes'),
    answer({ input: 10, output: 10 }),
    '{"type": torn' as never,
  ])
  execFileSync('mkfifo', [join(dir, 'pipe.jsonl')])
  ctx.on('internal/warning', () => {})
  ctx.plugin(sessionPlugin)
  await ctx.start()
})
afterAll(async () => {
  await ctx.stop()
  if (previousHome === undefined) delete process.env.KEEL_HOME
  else process.env.KEEL_HOME = previousHome
  rmSync(scratch, { recursive: true, force: true })
})

test('rows: recent first, turns, the last model, cost when known; a FIFO is a row marked unreadable', async () => {
  const rows = await sessionRows(ctx, cwd)
  expect(rows.map((row) => [row.id, row.turns, row.model, row.cost, row.unreadable])).toEqual([
    ['newer', 1, undefined, 'cost unknown', undefined],
    ['older', 2, 'anthropic/claude-sonnet-4-5', '$0.42', undefined],
    ['pipe', 0, undefined, undefined, 'is a FIFO, not a session file'],
  ])
  expect(rows[1]!.title).toBe('fix the flaky parser test')
  expect(rows[1]!.costUsd).toBeCloseTo(0.42, 6)
})

test('a FIFO swapped in after the listing is refused, not waited on', async () => {
  const lines: string[] = []
  expect(await streamSessionLines(join(dir, 'pipe.jsonl'), { line: (line) => lines.push(line) })).toBe(
    'not a regular file',
  )
  expect(lines).toEqual([])
})

test('the fuzzy filter: characters in order, tighter matches first, over prompt, model and id', async () => {
  const rows = await sessionRows(ctx, cwd)
  expect(filterRows(rows, 'flaky').map((row) => row.id)).toEqual(['older'])
  expect(filterRows(rows, 'rlsnts').map((row) => row.id)).toEqual(['newer'])
  expect(filterRows(rows, 'sonnet').map((row) => row.id)).toEqual(['older'])
  expect(filterRows(rows, 'zzz')).toEqual([])
  expect(filterRows(rows, '  ').map((row) => row.id)).toEqual(['newer', 'older', 'pipe'])
  // Both hold "the": the exact match earliest in its text leads.
  expect(filterRows(rows, 'the').map((row) => row.id)).toEqual(['older', 'newer'])
})
