// A long session opens with a window of its latest entries: the first paint and each key then cost what a short
// session's do (bench/tui.bench.ts). Earlier entries come back with /history, and later ones only append.
import { describe, expect, test } from 'vitest'
import type { SessionEvent } from '@keel/session'
import { foldEvent, foldEvents } from '@keel/door/transcript'
import { TranscriptView, WINDOW_LINES } from '../src/transcript.ts'
import { plainLines } from './support.ts'

/** A session of `turns` turns, each a prompt and a one-line answer. */
function session(turns: number): { events: SessionEvent[]; next: (type: string, data: object) => SessionEvent } {
  let seq = 0
  const next = (type: string, data: object) => ({ type, seq: seq++, time: 0, data }) as SessionEvent
  const events: SessionEvent[] = []
  for (let turn = 1; turn <= turns; turn++) {
    events.push(
      next('turn/start', { turn, trigger: 'prompt' }),
      next('user/message', { message: { role: 'user', content: [{ type: 'text', text: `question ${turn}` }] } }),
      next('step/start', { turn, step: 1 }),
      next('assistant/message', {
        turn,
        step: 1,
        message: { role: 'assistant', content: [{ type: 'text', text: `answer ${turn}` }] },
      }),
      next('turn/end', { turn, reason: 'completed' }),
    )
  }
  return { events, next }
}

const view = () => new TranscriptView({ present: () => ({ title: '' }) })

describe('the transcript window', () => {
  test('a long session draws its latest entries and says how many earlier ones wait for /history', () => {
    const { events } = session(2000)
    const transcript = view()
    transcript.reset(foldEvents(events))
    const lines = transcript.render(100)
    expect(lines.length).toBeLessThan(WINDOW_LINES + 50)
    const text = plainLines(lines)
    expect(text).toContain('› question 2000')
    expect(text).not.toContain('› question 1')
    expect(transcript.hidden).toBeGreaterThan(0)
    expect(text.join('\n')).toContain(
      `… ${transcript.hidden} earlier entries of this session not shown · /history shows more`,
    )
  })

  test('/history draws window after window until the whole session is shown', () => {
    const { events } = session(1200)
    const transcript = view()
    transcript.reset(foldEvents(events))
    transcript.render(100)
    const hidden = transcript.hidden
    let shown = 0
    for (let more = transcript.showEarlier(); more > 0; more = transcript.showEarlier()) shown += more
    expect(shown).toBe(hidden)
    expect(transcript.hidden).toBe(0)
    const text = plainLines(transcript.render(100))
    expect(text).toContain('› question 1')
    expect(text.join('\n')).not.toContain('earlier entries')
  })

  test('a short session is drawn whole; entries after the window only append lines', () => {
    const short = view()
    short.reset(foldEvents(session(20).events))
    expect(plainLines(short.render(100))).toContain('› question 1')
    expect(short.hidden).toBe(0)

    const { events, next } = session(2000)
    const state = foldEvents(events)
    const transcript = view()
    transcript.reset(state)
    const before = transcript.render(100)
    foldEvent(state, next('turn/start', { turn: 2001, trigger: 'prompt' }))
    foldEvent(
      state,
      next('user/message', { message: { role: 'user', content: [{ type: 'text', text: 'question 2001' }] } }),
    )
    const after = transcript.render(100)
    // The lines already drawn stay as they were (the terminal redraws nothing above), the new prompt follows.
    expect(after.slice(0, before.length)).toEqual(before)
    expect(plainLines(after.slice(before.length))).toContain('› question 2001')
  })
})
