// Finding yesterday's session: `sessions.list()` and `keel sessions search` over 2,000 generated sessions of 20 turns
// each, against the baseline of reading the directory listing and the files' bytes (what any search must at least
// do). Files go under os.tmpdir() and are removed at the end.
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Context } from 'cordis'
import * as sessionPlugin from '@keel/session'
import { cwdSlug } from '@keel/session'
import { searchSessions } from '../packages/cli/src/sessions-search.ts'
import { sessionRows } from '../packages/door/src/session-rows.ts'
import { median, ms, ratio, row } from './stats.ts'

const SESSIONS = 2000
const TURNS = 20
const scratch = mkdtempSync(join(tmpdir(), 'keel-bench-search-'))
const previousHome = process.env.KEEL_HOME
process.env.KEEL_HOME = join(scratch, 'home')
const cwd = join(scratch, 'project')
const dir = join(scratch, 'home', 'sessions', cwdSlug(cwd))
mkdirSync(dir, { recursive: true })

const words = 'lorem ipsum dolor sit amet consectetur adipiscing elit sed do eiusmod tempor'.split(' ')
const sentence = (n: number, salt: number) =>
  Array.from({ length: n }, (_, i) => words[(i * 7 + salt) % words.length]).join(' ')
for (let s = 0; s < SESSIONS; s++) {
  const id = `bench${String(s).padStart(6, '0')}`
  const lines = [JSON.stringify({ type: 'session', version: 1, id, createdAt: s, cwd })]
  let seq = 0
  const push = (type: string, data: unknown, surface = false) =>
    lines.push(JSON.stringify({ type, seq: seq++, time: s, data, ...(surface ? { surfaceOp: { op: 'append' } } : {}) }))
  for (let t = 1; t <= TURNS; t++) {
    push('turn/start', { turn: t, trigger: 'prompt' })
    push('step/start', { turn: t, step: 1 })
    push('user/message', { message: { role: 'user', content: [{ type: 'text', text: sentence(20, s + t) }] } }, true)
    const todos = [
      { content: s === SESSIONS - 7 && t === TURNS ? 'rename the zeppelin module' : sentence(6, t), status: 'pending' },
    ]
    push('todo/write', { todos })
    push(
      'assistant/message',
      {
        turn: t,
        step: 1,
        message: { role: 'assistant', content: [{ type: 'text', text: sentence(80, t) }] },
        usage: { input: 2000, output: 100 },
        costUsd: 0.001,
      },
      true,
    )
    push('step/end', { turn: t, step: 1 })
    push('turn/end', { turn: t, reason: 'completed' })
  }
  writeFileSync(join(dir, `${id}.jsonl`), `${lines.join('\n')}\n`)
}

const ctx = new Context()
ctx.on('internal/warning', () => {})
ctx.plugin(sessionPlugin)
await ctx.start()

const runs = 5
const listing: number[] = []
const reading: number[] = []
const listed: number[] = []
const rowed: number[] = []
const searched: number[] = []
let found = 0
for (let i = 0; i < runs; i++) {
  let started = performance.now()
  const names = readdirSync(dir)
  listing.push(performance.now() - started)
  started = performance.now()
  for (const name of names) readFileSync(join(dir, name))
  reading.push(performance.now() - started)
  started = performance.now()
  const summaries = ctx.sessions.list(cwd)
  listed.push(performance.now() - started)
  started = performance.now()
  await sessionRows(ctx, cwd)
  rowed.push(performance.now() - started)
  started = performance.now()
  found = (await searchSessions(summaries, 'zeppelin')).hits.length
  searched.push(performance.now() - started)
}

console.log(`${SESSIONS} sessions × ${TURNS} turns, medians of ${runs} (search found ${found})`)
row('readdir of the folder (baseline)', ms(median(listing)))
row('sessions.list() (ids, times, first prompts)', ms(median(listed)), ratio(median(listed), median(listing)))
row(
  'session rows (the /resume picker and `sessions list`: + turns, model, cost)',
  ms(median(rowed)),
  ratio(median(rowed), median(listing)),
)
row('read every file whole (baseline)', ms(median(reading)))
row('sessions search for a plan word', ms(median(searched)), ratio(median(searched), median(reading)))

await ctx.stop()
if (previousHome === undefined) delete process.env.KEEL_HOME
else process.env.KEEL_HOME = previousHome
rmSync(scratch, { recursive: true, force: true })
