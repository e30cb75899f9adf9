// todo_write figures: tool latency from execute to the durable event against a raw append+fsync of the same
// bytes, and the standing plan by full fold vs backscan as the log grows.
import { appendFileSync, closeSync, fsyncSync, mkdtempSync, openSync, readFileSync, rmSync, writeSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { SessionEvent } from '@keel/session'
import { standingPlan, standingPlanFromFile } from '@keel/todo'
import { makeKeel } from '../test-support/harness.ts'
import { ms, percentile, ratio, row } from './stats.ts'

const scratch = mkdtempSync(join(tmpdir(), 'keel-bench-todo-'))
const N = 300
const todos = Array.from({ length: 6 }, (_, i) => ({
  content: `Task number ${i} with a realistic length`,
  status: i < 2 ? 'completed' : i === 2 ? 'in_progress' : 'pending',
}))

// 1. execute → durable todo/write (the tool/result that follows is fsynced; measure through it).
{
  const keel = await makeKeel({ dev: false })
  const agent = keel.agent()
  const s = agent.session
  s.append('turn/start', { turn: 1, trigger: 'prompt' })
  s.append('step/start', { turn: 1, step: 1 })
  const samples: number[] = []
  for (let i = 0; i < N; i++) {
    const callId = `c${i}`
    const args = JSON.stringify({ todos })
    s.append('tool/call', { turn: 1, step: 1, callId, name: 'todo_write', arguments: args })
    const started = performance.now()
    const result = await keel.ctx.tools.execute({
      callId,
      name: 'todo_write',
      arguments: args,
      agent,
      signal: new AbortController().signal,
    })
    s.append(
      'tool/result',
      { turn: 1, step: 1, callId, content: result.content, isError: result.isError },
      { surfaceOp: { op: 'append' } },
    )
    samples.push(performance.now() - started)
  }
  keel.ctx.agents.close(agent)
  await keel.dispose()
  const raw: number[] = []
  const path = join(scratch, 'raw.jsonl')
  const line =
    JSON.stringify({ type: 'todo/write', seq: 0, time: 0, data: { todos } }) +
    '\n' +
    JSON.stringify({
      type: 'tool/result',
      seq: 1,
      time: 0,
      data: { content: [{ type: 'text', text: 'Todo list updated: 2 completed, 1 in progress, 3 pending.' }] },
    }) +
    '\n'
  const fd = openSync(path, 'a')
  for (let i = 0; i < N; i++) {
    const started = performance.now()
    appendFileSync(fd, line)
    fsyncSync(fd)
    raw.push(performance.now() - started)
  }
  closeSync(fd)
  row('raw appendFileSync+fsyncSync (baseline) p50/p99', ms(percentile(raw, 50)), ms(percentile(raw, 99)))
  row(
    'todo_write execute → durable result p50/p99',
    ms(percentile(samples, 50)),
    ms(percentile(samples, 99)),
    ratio(percentile(samples, 50), percentile(raw, 50)),
    'p50 vs raw',
  )
}

// 2. Standing plan: full fold vs backscan.
for (const size of [10_000, 100_000, 1_000_000]) {
  const path = join(scratch, `log-${size}.jsonl`)
  const fd = openSync(path, 'w')
  writeSync(fd, JSON.stringify({ type: 'session', version: 1, id: 'bench', createdAt: 0, cwd: '/' }) + '\n')
  let seq = 0
  let chunk = ''
  const put = (event: object) => {
    chunk += JSON.stringify(event) + '\n'
    if (chunk.length > 1 << 20) {
      writeSync(fd, chunk)
      chunk = ''
    }
  }
  put({ type: 'turn/start', seq: seq++, time: 0, data: { turn: 1, trigger: 'prompt' } })
  while (seq < size - 20) {
    put({
      type: 'tool/result',
      seq: seq++,
      time: 0,
      data: {
        turn: 1,
        step: 1,
        callId: 'x',
        content: [{ type: 'text', text: 'output of a command that printed a line or two' }],
        isError: false,
      },
    })
    if (seq % 500 === 0) put({ type: 'todo/write', seq: seq++, time: 0, data: { todos } })
  }
  put({ type: 'todo/write', seq: seq++, time: 0, data: { todos } })
  while (seq < size) put({ type: 'step/end', seq: seq++, time: 0, data: { turn: 1, step: 1 } })
  writeSync(fd, chunk)
  closeSync(fd)
  let started = performance.now()
  const events = readFileSync(path, 'utf8')
    .trim()
    .split('\n')
    .slice(1)
    .map((l) => JSON.parse(l) as SessionEvent)
  standingPlan(events)
  const fold = performance.now() - started
  started = performance.now()
  const { bytesRead } = standingPlanFromFile(path)
  const scan = performance.now() - started
  row(
    `standing plan, ${size.toLocaleString('en')} events: fold vs backscan`,
    ms(fold),
    ms(scan),
    `${ratio(fold, scan)} faster`,
    `${(bytesRead / 1024).toFixed(0)} KiB read`,
  )
  rmSync(path)
}

rmSync(scratch, { recursive: true, force: true })
