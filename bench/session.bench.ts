// @keel/session figures: durable append latency against raw appendFileSync+fsyncSync of the same bytes, loading a
// 100k-event log through the store against JSON.parse of its lines, and backscan for the standing plan (the latest
// todo/write) in 10k/100k/1M-event logs against a full parse. Baselines run in the same process, interleaved where
// they can be. Files go under os.tmpdir() and are removed at the end.
import {
  appendFileSync,
  closeSync,
  fsyncSync,
  mkdtempSync,
  openSync,
  readFileSync,
  rmSync,
  statSync,
  writeSync,
} from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Context } from 'cordis'
import * as sessionPlugin from '@keel/session'
import { Session, backscan, sessionPath, type SessionEvent } from '@keel/session'
import { median, ms, percentile, ratio, row } from './stats.ts'

const scratch = mkdtempSync(join(tmpdir(), 'keel-bench-session-'))
const previousHome = process.env.KEEL_HOME
process.env.KEEL_HOME = join(scratch, 'home')
const ctx = new Context()
ctx.on('internal/warning', () => {})
ctx.plugin(sessionPlugin)
await ctx.start()

const time = (fn: () => void): number => {
  const started = performance.now()
  fn()
  return performance.now() - started
}

const append = { surfaceOp: { op: 'append' as const } }
const text = (n: number) => 'lorem ipsum dolor sit amet '.repeat(Math.ceil(n / 27)).slice(0, n)

/** One realistic turn (11 events), the way the agent loop writes it. */
function turn(session: Session, n: number): void {
  const callId = `call_${n}_1_0`
  session.append('turn/start', { turn: n, trigger: 'prompt' })
  session.append('step/start', { turn: n, step: 1 })
  session.append('user/message', { message: { role: 'user', content: [{ type: 'text', text: text(120) }] } }, append)
  session.append(
    'assistant/message',
    {
      turn: n,
      step: 1,
      message: {
        role: 'assistant',
        content: [
          { type: 'text', text: text(200) },
          { type: 'tool-call', id: callId, name: 'bash', arguments: '{"command":"ls -la src"}' },
        ],
      },
      usage: { input: 1200, output: 80 },
    },
    append,
  )
  session.append('tool/call', { turn: n, step: 1, callId, name: 'bash', arguments: '{"command":"ls -la src"}' })
  session.append(
    'tool/result',
    { turn: n, step: 1, callId, content: [{ type: 'text', text: text(600) }], isError: false },
    append,
  )
  session.append('step/end', { turn: n, step: 1 })
  session.append('step/start', { turn: n, step: 2 })
  session.append(
    'assistant/message',
    { turn: n, step: 2, message: { role: 'assistant', content: [{ type: 'text', text: text(300) }] } },
    append,
  )
  session.append('step/end', { turn: n, step: 2 })
  session.append('turn/end', { turn: n, reason: 'completed' })
}

try {
  // 1. Durable append: a tool/result through the store (validate, write, fsync, publish) vs the same bytes written
  //    and fsynced by hand. Interleaved, so both see the same disk and load.
  {
    const N = 300
    const session = ctx.sessions.create({ cwd: scratch, id: 'durable' })
    session.append('turn/start', { turn: 1, trigger: 'prompt' })
    session.append('step/start', { turn: 1, step: 1 })
    const rawFd = openSync(join(scratch, 'raw.jsonl'), 'a')
    const store: number[] = []
    const raw: number[] = []
    for (let i = 0; i < N; i++) {
      const content = [{ type: 'text' as const, text: text(400) }]
      let event: SessionEvent | undefined
      store.push(
        time(() => {
          event = session.append('tool/result', { turn: 1, step: 1, callId: `c${i}`, content, isError: false }, append)
        }),
      )
      const bytes = JSON.stringify(event) + '\n'
      raw.push(
        time(() => {
          appendFileSync(rawFd, bytes)
          fsyncSync(rawFd)
        }),
      )
    }
    closeSync(rawFd)
    ctx.sessions.close(session)
    row(`durable append (tool/result, ${N}×): store p50 / p99`, ms(percentile(store, 50)), ms(percentile(store, 99)))
    row('  raw appendFileSync+fsyncSync p50 / p99', ms(percentile(raw, 50)), ms(percentile(raw, 99)))
    row(
      '  store / raw (p50, p99)',
      ratio(percentile(store, 50), percentile(raw, 50)),
      ratio(percentile(store, 99), percentile(raw, 99)),
    )
  }

  // 1b. The same without fsync (a tool/call is written but not synced): the store's own CPU cost per append.
  {
    const N = 2000
    const session = ctx.sessions.create({ cwd: scratch, id: 'plain' })
    const rawFd = openSync(join(scratch, 'raw-plain.jsonl'), 'a')
    const store: number[] = []
    const raw: number[] = []
    for (let i = 0; i < N; i++) {
      let event: SessionEvent | undefined
      store.push(
        time(() => {
          event = session.append('tool/call', {
            turn: 1,
            step: 1,
            callId: `c${i}`,
            name: 'bash',
            arguments: `{"command":"${text(200)}"}`,
          })
        }),
      )
      const bytes = JSON.stringify(event) + '\n'
      raw.push(
        time(() => {
          appendFileSync(rawFd, bytes)
        }),
      )
    }
    closeSync(rawFd)
    ctx.sessions.close(session)
    row(`unsynced append (tool/call, ${N}×): store p50 / p99`, ms(percentile(store, 50)), ms(percentile(store, 99)))
    row('  raw appendFileSync p50 / p99', ms(percentile(raw, 50)), ms(percentile(raw, 99)))
  }

  // 2. Load a 100k-event log: ctx.sessions.open (parse, seq checks, freeze, surface fold, repair check, lock) and
  //    ctx.sessions.read (parse and seq checks only) vs JSON.parse of every line.
  {
    const id = 'load100k'
    const source = new Session({ type: 'session', version: 1, id, createdAt: Date.now(), cwd: scratch })
    for (let n = 1; source.seq < 100_000; n++) turn(source, n)
    const path = sessionPath(scratch, id)
    const fd = openSync(path, 'wx')
    let chunk = JSON.stringify(source.header) + '\n'
    for (const event of source.events) {
      chunk += JSON.stringify(event) + '\n'
      if (chunk.length > 1 << 20) {
        writeSync(fd, chunk)
        chunk = ''
      }
    }
    writeSync(fd, chunk)
    closeSync(fd)
    const size = statSync(path).size
    const RUNS = 5
    const opened: number[] = []
    const read: number[] = []
    const parsed: number[] = []
    for (let i = 0; i < RUNS; i++) {
      parsed.push(
        time(() => {
          const lines = readFileSync(path, 'utf8').split('\n')
          for (const line of lines) if (line) JSON.parse(line)
        }),
      )
      read.push(
        time(() => {
          ctx.sessions.read(id)
        }),
      )
      opened.push(
        time(() => {
          ctx.sessions.close(ctx.sessions.open(id).session)
        }),
      )
    }
    row(`load ${source.seq} events (${(size / 1e6).toFixed(1)} MB): JSON.parse of lines`, ms(median(parsed)))
    row('  ctx.sessions.read (median)', ms(median(read)), ratio(median(read), median(parsed)))
    row('  ctx.sessions.open + close (median)', ms(median(opened)), ratio(median(opened), median(parsed)))
  }

  // 3. The standing plan: the latest todo/write, 50 events before the end, found by backscan vs a full parse.
  {
    const note = (seq: number) =>
      `{"type":"tool/call","seq":${seq},"time":1767000000000,"data":{"turn":1,"step":1,"callId":"c${seq}","name":"bash","arguments":"{\\"command\\":\\"ls\\"}"}}\n`
    const plan = (seq: number) =>
      `{"type":"todo/write","seq":${seq},"time":1767000000000,"data":{"todos":[{"content":"read the code","status":"completed"},{"content":"fix the bug","status":"in_progress"},{"content":"run the tests","status":"pending"}]}}\n`
    const settle = (event: SessionEvent) =>
      (event.type as string) === 'todo/write' ? event.data : event.type === 'turn/start' ? null : undefined
    for (const count of [10_000, 100_000, 1_000_000]) {
      const path = join(scratch, `plan-${count}.jsonl`)
      const fd = openSync(path, 'w')
      let chunk = JSON.stringify({ type: 'session', version: 1, id: 'plan', createdAt: 0, cwd: scratch }) + '\n'
      for (let seq = 0; seq < count; seq++) {
        chunk += seq === count - 50 || seq === Math.floor(count / 2) ? plan(seq) : note(seq)
        if (chunk.length > 1 << 20) {
          writeSync(fd, chunk)
          chunk = ''
        }
      }
      writeSync(fd, chunk)
      closeSync(fd)
      const size = statSync(path).size
      const scans: number[] = []
      let bytesRead = 0
      for (let i = 0; i < 21; i++)
        scans.push(
          time(() => {
            bytesRead = backscan(path, settle).bytesRead
          }),
        )
      const fulls: number[] = []
      for (let i = 0; i < (count >= 1_000_000 ? 3 : 7); i++) {
        fulls.push(
          time(() => {
            let latest: unknown
            for (const line of readFileSync(path, 'utf8').split('\n')) {
              if (!line) continue
              const event = JSON.parse(line) as SessionEvent
              const settled = settle(event)
              if (settled !== undefined) latest = settled
            }
            return latest
          }),
        )
      }
      row(
        `standing plan, ${count.toLocaleString('en')} events (${(size / 1e6).toFixed(1)} MB): backscan`,
        ms(median(scans)),
        `${(bytesRead / 1024).toFixed(0)} KB read`,
      )
      row('  full parse', ms(median(fulls)), `backscan is ${ratio(median(fulls), median(scans))} faster`)
    }
  }
} finally {
  await ctx.stop()
  if (previousHome === undefined) delete process.env.KEEL_HOME
  else process.env.KEEL_HOME = previousHome
  rmSync(scratch, { recursive: true, force: true })
}
