// A replacement (a compaction summary) stands for the events it replaced: a later replace covers it by that span,
// so a summary made in turn T can be folded into a new one while turn T's own messages stay on the surface.
import { describe, expect, it } from 'vitest'
import { Session, SurfaceError, type SessionEvent } from '@keel/session'
import { appendTurn, header } from './helpers.ts'

const summary = (text: string) => ({
  message: { role: 'user' as const, source: 'compaction' as const, content: [{ type: 'text' as const, text }] },
})
const texts = (session: Session) =>
  session
    .deriveMessages()
    .map((message) => message.content.map((block) => (block.type === 'text' ? block.text : block.type)).join(''))

/** Turns 1 and 2 whole; turn 3 open after its prompt (seq 24), with turn 1 (seqs 0..10) summarised at seq 25. */
function compactedInTurnThree(): Session {
  const session = new Session(header())
  appendTurn(session, 1) // surface nodes 2, 3, 5, 8
  appendTurn(session, 2) // surface nodes 13, 14, 16, 19
  session.append('turn/start', { turn: 3, trigger: 'prompt' })
  session.append('step/start', { turn: 3, step: 1 })
  session.append(
    'user/message',
    { message: { role: 'user', content: [{ type: 'text', text: 'prompt 3' }] } },
    { surfaceOp: { op: 'append' } },
  )
  session.append('user/message', summary('S1'), { surfaceOp: { op: 'replace', start: 0, end: 10 } })
  return session
}

describe('surface spans', () => {
  it('a summary keeps the span it replaced; a later range covers it by that span, not by its own seq', () => {
    const session = compactedInTurnThree()
    expect(session.surfaceNodes).toEqual([25, 13, 14, 16, 19, 24])
    expect(session.surfaceSpans).toEqual([
      [0, 10],
      [13, 13],
      [14, 14],
      [16, 16],
      [19, 19],
      [24, 24],
    ])
    // Fold S1 and turn 2 into one summary, keeping turn 3's prompt (seq 24, below S1's own seq 25).
    const second = session.append('user/message', summary('S2'), { surfaceOp: { op: 'replace', start: 0, end: 21 } })
    expect(session.surfaceNodes).toEqual([second.seq, 24])
    expect(session.surfaceSpans).toEqual([
      [0, 21],
      [24, 24],
    ])
    expect(texts(session)).toEqual(['S2', 'prompt 3'])
    // A session seeded from the log (resume) folds the same way.
    const reloaded = new Session(header(), JSON.parse(JSON.stringify(session.events)) as SessionEvent[])
    expect(reloaded.surfaceNodes).toEqual(session.surfaceNodes)
    expect(reloaded.surfaceSpans).toEqual(session.surfaceSpans)
    expect(texts(reloaded)).toEqual(texts(session))
  })

  it('a range that takes in part of what a summary stands for is refused', () => {
    const session = compactedInTurnThree()
    expect(() =>
      session.append('user/message', summary('x'), { surfaceOp: { op: 'replace', start: 5, end: 21 } }),
    ).toThrow(SurfaceError)
    expect(() =>
      session.append('user/message', summary('x'), { surfaceOp: { op: 'replace', start: 5, end: 21 } }),
    ).toThrow(/splits what the replacement at seq 25 stands for \(\[0, 10\]\)/)
    expect(session.surfaceNodes).toEqual([25, 13, 14, 16, 19, 24])
  })

  it('a range naming a summary by its own seq (logs written before spans) still covers it', () => {
    const session = compactedInTurnThree()
    // The old rule: the range runs from the first kept node to the summary's own seq, taking in all of turn 3.
    const folded = session.append('user/message', summary('all'), { surfaceOp: { op: 'replace', start: 13, end: 25 } })
    expect(session.surfaceNodes).toEqual([folded.seq])
    expect(session.surfaceSpans).toEqual([[0, 25]])
  })
})
