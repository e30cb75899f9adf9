// keel serve's history: the tail page of a session file (what a page load asks for) read backwards from the end,
// against loading and folding the whole file. Prints figures; asserts nothing.
import { mkdtempSync, rmSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { readSessionFile } from '@keel/session'
import { standingPlan } from '@keel/todo'
import { pageOfEvents, pageOfFile, standingPlanOfFile } from '../packages/web/src/history.ts'
import { buildLog, writeLogFile } from '../packages/web/tests/log-fixture.ts'
import { median, ms, ratio, row } from './stats.ts'

const dir = mkdtempSync(join(tmpdir(), 'keel-web-bench-'))
const RUNS = 15

function time(run: () => unknown): number[] {
  const samples: number[] = []
  for (let i = 0; i < RUNS; i++) {
    const start = performance.now()
    run()
    samples.push(performance.now() - start)
  }
  return samples
}

try {
  for (const size of [10_000, 100_000]) {
    const session = buildLog(size)
    const path = join(dir, `${size}.jsonl`)
    writeLogFile(session, path)
    const bytes = statSync(path).size
    let tailBytes = 0
    let tailEvents = 0
    const tail = time(() => {
      const page = pageOfFile(path, { maxMessages: 50 })
      const plan = standingPlanOfFile(path, page.lastSeq, page.events)
      tailBytes = page.bytesRead + plan.bytesRead
      tailEvents = page.events.length
    })
    const full = time(() => {
      const { events } = readSessionFile(path)
      pageOfEvents(events, { maxMessages: 50 })
      standingPlan(events)
    })
    const live = time(() => {
      pageOfEvents(session.events, { maxMessages: 50 })
    })
    console.log(
      `${session.seq.toLocaleString('en')} events, ${(bytes / 1e6).toFixed(1)} MB file; tail page = ${tailEvents} events (50 messages)`,
    )
    row('  tail page from the file (backwards) + plan', ms(median(tail)), `${(tailBytes / 1024).toFixed(0)} KiB read`)
    row(
      '  whole file loaded, then paged + folded',
      ms(median(full)),
      `${(bytes / 1024).toFixed(0)} KiB read`,
      `tail is ${ratio(median(full), median(tail))} faster`,
    )
    row('  tail page of a live (in-memory) session', ms(median(live)))
  }
} finally {
  rmSync(dir, { recursive: true, force: true })
}
