import { appendFileSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, test } from 'vitest'
import { Session, type SessionEvent } from '@keel/session'
import { standingPlan } from '@keel/todo'
import { pageOfEvents, pageOfFile, PageRequestError, standingPlanOfFile, type Page } from '../src/history.ts'
import { appendTurn, buildLog, header, planFor, writeLogFile } from './log-fixture.ts'

const scratch = mkdtempSync(join(tmpdir(), 'keel-web-history-'))
afterAll(() => rmSync(scratch, { recursive: true, force: true }))

const PAGE_STARTS = new Set(['turn/start', 'step/start', 'user/message', 'assistant/message'])
const isMessage = (event: SessionEvent) => event.type === 'user/message' || event.type === 'assistant/message'

/** Every page from the tail back to seq 0, newest first. */
function allPages(read: (beforeSeq: number | undefined) => Page): Page[] {
  const pages: Page[] = []
  let beforeSeq: number | undefined
  for (;;) {
    const page = read(beforeSeq)
    pages.push(page)
    if (!page.hasMore) return pages
    expect(page.events.length).toBeGreaterThan(0)
    beforeSeq = page.events[0]!.seq
  }
}

/** The properties every paging of a log must have. */
function checkPaging(events: readonly SessionEvent[], pages: Page[], maxMessages: number): void {
  const ordered = pages.slice().reverse()
  expect(ordered.flatMap((page) => page.events.map((event) => event.seq))).toEqual(events.map((event) => event.seq))
  const pageOfSeq = new Map<number, number>()
  for (const [index, page] of ordered.entries()) for (const event of page.events) pageOfSeq.set(event.seq, index)
  const callPage = new Map<string, number>()
  for (const event of events) {
    if (event.type === 'tool/call') callPage.set(event.data.callId, pageOfSeq.get(event.seq)!)
    // The load-bearing rule: a result always sits on the same page as its call.
    if (event.type === 'tool/result')
      expect(pageOfSeq.get(event.seq), `result of ${event.data.callId}`).toBe(callPage.get(event.data.callId))
  }
  ordered.forEach((page, index) => {
    expect(page.hasMore).toBe(index > 0)
    if (index > 0) {
      expect(PAGE_STARTS.has(page.events[0]!.type), `page starts with ${page.events[0]!.type}`).toBe(true)
      expect(page.events.filter(isMessage).length).toBeGreaterThanOrEqual(maxMessages)
    }
  })
}

describe('history pages', () => {
  test('cut at message boundaries: a tool call and its result never land on different pages, live or from the file', () => {
    const session = buildLog(400)
    const path = join(scratch, 'paging.jsonl')
    writeLogFile(session, path)
    for (const maxMessages of [1, 2, 3, 5, 8, 50]) {
      const live = allPages((beforeSeq) => pageOfEvents(session.events, { beforeSeq, maxMessages }))
      checkPaging(session.events, live, maxMessages)
      const cold = allPages((beforeSeq) => pageOfFile(path, { beforeSeq, maxMessages }))
      expect(cold.map((page) => page.events)).toEqual(live.map((page) => page.events))
      expect(cold.map((page) => page.hasMore)).toEqual(live.map((page) => page.hasMore))
    }
  })

  test('a page that completes its messages at a message pulls in the step and turn openers right before it', () => {
    const session = new Session(header())
    appendTurn(session, 1)
    appendTurn(session, 2)
    const page = pageOfEvents(session.events, { maxMessages: 3 })
    // Turn 2's messages: the user prompt, the assistant's tool step, the final answer.
    expect(page.events[0]).toMatchObject({ type: 'turn/start', data: { turn: 2 } })
    expect(page.events.filter(isMessage)).toHaveLength(3)
    expect(page.hasMore).toBe(true)
  })

  test('calls answered together stay with their results even when the page is full before the results', () => {
    const session = new Session(header())
    appendTurn(session, 1)
    // One message per page would cut at the closing answer; the step before it holds two calls answered together.
    const events = session.events
    const pages = allPages((beforeSeq) => pageOfEvents(events, { beforeSeq, maxMessages: 1 }))
    checkPaging(events, pages, 1)
    const toolPage = pages.find((page) => page.events.some((event) => event.type === 'tool/call'))!
    expect(toolPage.events.map((event) => event.type)).toEqual([
      'assistant/message',
      'tool/call',
      'tool/call',
      'tool/result',
      'tool/result',
      'step/end',
    ])
  })

  test('the tail page of a running step holds the call still waiting for its result', () => {
    const session = new Session(header())
    appendTurn(session, 1)
    session.append('turn/start', { turn: 2, trigger: 'prompt' })
    session.append('step/start', { turn: 2, step: 1 })
    session.append(
      'user/message',
      { message: { role: 'user', content: [{ type: 'text', text: 'go' }] } },
      { surfaceOp: { op: 'append' } },
    )
    session.append(
      'assistant/message',
      {
        turn: 2,
        step: 1,
        message: { role: 'assistant', content: [{ type: 'tool-call', id: 'c1', name: 'bash', arguments: '{}' }] },
      },
      { surfaceOp: { op: 'append' } },
    )
    session.append('tool/call', { turn: 2, step: 1, callId: 'c1', name: 'bash', arguments: '{}' })
    const page = pageOfEvents(session.events, { maxMessages: 1 })
    expect(page.events.map((event) => event.type)).toEqual(['assistant/message', 'tool/call'])
  })

  test('beforeSeq inside a step is refused instead of answered with a split page', () => {
    const session = buildLog(60)
    const result = session.events.find((event) => event.type === 'tool/result')!
    expect(() => pageOfEvents(session.events, { beforeSeq: result.seq, maxMessages: 2 })).toThrow(PageRequestError)
    expect(() => pageOfEvents(session.events, { beforeSeq: result.seq, maxMessages: 2 })).toThrow(/not a page start/)
    const path = join(scratch, 'refuse.jsonl')
    writeLogFile(session, path)
    expect(() => pageOfFile(path, { beforeSeq: result.seq, maxMessages: 2 })).toThrow(PageRequestError)
    // Past the end is simply the whole log before it.
    expect(pageOfEvents(session.events, { beforeSeq: session.seq + 10, maxMessages: 2 }).events.at(-1)?.seq).toBe(
      session.seq - 1,
    )
  })

  test('a torn last line is not part of the tail page', () => {
    const session = buildLog(40)
    const path = join(scratch, 'torn.jsonl')
    writeLogFile(session, path)
    appendFileSync(path, '{"type":"turn/start","seq":')
    const page = pageOfFile(path, { maxMessages: 2 })
    expect(page.lastSeq).toBe(session.seq - 1)
    expect(page.events.at(-1)?.seq).toBe(session.seq - 1)
  })

  test('a log whose seqs jump is reported, not paged', () => {
    const session = buildLog(30)
    const path = join(scratch, 'gap.jsonl')
    const lines = [
      JSON.stringify(session.header),
      ...session.events.filter((event) => event.seq !== 20).map((event) => JSON.stringify(event)),
    ]
    writeFileSync(path, lines.join('\n') + '\n')
    expect(() => pageOfFile(path, { maxMessages: 50 })).toThrow(/not contiguous/)
  })

  test('the tail page of a 20,000-event file reads a few blocks from its end, not the file', () => {
    const plan = [{ content: 'ship it', status: 'in_progress' as const }]
    const session = buildLog(20_000, { planEvery: 1_000_000, finalPlan: plan })
    const path = join(scratch, 'big.jsonl')
    writeLogFile(session, path)
    const size = statSync(path).size
    const page = pageOfFile(path, { maxMessages: 50 })
    expect(page.events).toEqual(pageOfEvents(session.events, { maxMessages: 50 }).events)
    expect(page.bytesRead).toBeLessThan(size / 20)
    const plan2 = standingPlanOfFile(path, page.lastSeq, page.events)
    expect(plan2.todos).toEqual(plan)
    expect(plan2.bytesRead).toBe(0) // settled inside the page already read
  })

  test('the standing plan behind the tail page is found by reading backwards, and only up to asOfSeq', () => {
    const session = new Session(header())
    appendTurn(session, 1, { plan: planFor(1) })
    for (let turn = 2; turn <= 4; turn++) appendTurn(session, turn)
    const path = join(scratch, 'plan.jsonl')
    writeLogFile(session, path)
    // Turns 2..4 started after the write: no plan stands.
    expect(standingPlanOfFile(path, session.seq - 1, []).todos).toBeNull()
    expect(standingPlan(session.events)).toBeNull()
    // As of the end of turn 1 (a writer that is ahead of us does not count), turn 1's plan stood.
    const endOfTurn1 = session.events.find((event) => event.type === 'turn/end')!.seq
    expect(standingPlanOfFile(path, endOfTurn1, []).todos).toEqual(planFor(1))
  })
})
