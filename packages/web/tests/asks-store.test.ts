// The page's side of permission asks: cards from frames and from the tail page, gone when decided, and the
// decision line on the call's row.
import { describe, expect, test } from 'vitest'
import type { PermissionAsk } from '@keel/permissions'
import { Session } from '@keel/session'
import { ConversationStore, type HistorySource } from '../src/client/store.ts'
import { parseDecision } from '@keel/door/transcript'
import { pageOfEvents } from '../src/history.ts'
import type { HistoryPage, ServerFrame } from '../src/protocol.ts'
import { header } from './log-fixture.ts'

const ID = 'page-session'
const append = { surfaceOp: { op: 'append' } } as const

const ask = (callId: string, sessionId = ID): PermissionAsk => ({
  sessionId,
  callId,
  tool: 'bash',
  summary: `bash: rm -rf ${callId}`,
  detail: `rm -rf ${callId}`,
  suggestedRules: ['bash(rm:*)'],
  sessionRules: ['bash(rm:*)'],
})

/** Pages of `session`, with the asks the host would report as still waiting. */
class Source implements HistorySource {
  asks: PermissionAsk[] = []
  gate: Promise<void> | undefined
  constructor(readonly session: Session) {}
  async history(): Promise<HistoryPage> {
    const asks = this.asks.slice()
    const page = pageOfEvents(this.session.events, { maxMessages: 50 })
    await this.gate
    return { events: page.events.map((event) => ({ event })), hasMore: page.hasMore, asks, running: true }
  }
}

function callTurn(session: Session, callId: string): void {
  session.append('turn/start', { turn: 1, trigger: 'prompt' })
  session.append('step/start', { turn: 1, step: 1 })
  session.append(
    'user/message',
    { message: { role: 'user', content: [{ type: 'text', text: 'clean' }], source: 'user' } },
    append,
  )
  session.append(
    'assistant/message',
    {
      turn: 1,
      step: 1,
      message: {
        role: 'assistant',
        content: [{ type: 'tool-call', id: callId, name: 'bash', arguments: '{"command":"rm -rf build"}' }],
      },
    },
    append,
  )
  session.append('tool/call', { turn: 1, step: 1, callId, name: 'bash', arguments: '{"command":"rm -rf build"}' })
}

const event = (session: Session): ServerFrame => ({ type: 'session/event', sessionId: ID, event: session.last! })

describe('ConversationStore: permission asks', () => {
  test('an ask frame shows a card; the decision on the log removes it and marks the row', async () => {
    const session = new Session(header(ID))
    callTurn(session, 'c1')
    const store = new ConversationStore(ID, new Source(session))
    await store.open()
    store.accept({ type: 'permission/ask', sessionId: 'another-page', ask: ask('c9', 'another-page') })
    expect(store.getSnapshot().asks).toEqual([])
    store.accept({ type: 'permission/ask', sessionId: ID, ask: ask('c1') })
    store.accept({ type: 'permission/ask', sessionId: ID, ask: ask('c1') })
    expect(store.getSnapshot().asks).toEqual([ask('c1')])
    session.append('permission/request', { callId: 'c1', tool: 'bash', summary: 'bash: rm -rf build' })
    store.accept(event(session))
    const row = () => store.getSnapshot().items.find((item) => item.kind === 'tool')
    expect(row()).toMatchObject({ asked: true })
    session.append('permission/decision', { callId: 'c1', decision: 'deny', scope: 'once' })
    store.accept(event(session))
    expect(store.getSnapshot().asks).toEqual([])
    expect(row()).toMatchObject({ decision: { decision: 'deny', scope: 'once' } })
    // A late ask frame for a decided call does not bring the card back.
    store.accept({ type: 'permission/ask', sessionId: ID, ask: ask('c1') })
    expect(store.getSnapshot().asks).toEqual([])
  })

  test('a reload shows the waiting asks from the tail page; a settled frame removes a subagent ask', async () => {
    const session = new Session(header(ID))
    callTurn(session, 'c1')
    session.append('permission/request', { callId: 'c1', tool: 'bash', summary: 'bash: rm -rf build' })
    const source = new Source(session)
    source.asks = [ask('c1'), ask('k1', 'child-session')]
    const store = new ConversationStore(ID, source)
    await store.open()
    expect(store.getSnapshot().asks.map((waiting) => waiting.callId)).toEqual(['c1', 'k1'])
    store.accept({ type: 'permission/settled', sessionId: ID, askSessionId: 'child-session', callId: 'k1' })
    expect(store.getSnapshot().asks.map((waiting) => waiting.callId)).toEqual(['c1'])
    store.dropAsk(ID, 'c1')
    expect(store.getSnapshot().asks).toEqual([])
  })

  test('an ask that arrives while the tail page is on its way survives the page; one settled meanwhile stays gone', async () => {
    const session = new Session(header(ID))
    callTurn(session, 'c1')
    const source = new Source(session)
    source.asks = [ask('old')]
    let release!: () => void
    source.gate = new Promise((done) => {
      release = done
    })
    const store = new ConversationStore(ID, source)
    const opening = store.open()
    store.accept({ type: 'permission/ask', sessionId: ID, ask: ask('c1') })
    store.accept({ type: 'permission/settled', sessionId: ID, askSessionId: ID, callId: 'old' })
    release()
    await opening
    expect(store.getSnapshot().asks.map((waiting) => waiting.callId)).toEqual(['c1'])
  })

  test('decisions read by shape, in the words of @keel/permissions (the terminal UI and sessions show)', () => {
    expect(parseDecision({ callId: 'c', decision: 'deny', scope: 'rule', rule: 'bash(rm:*)' })).toEqual({
      callId: 'c',
      decision: 'deny',
      scope: 'rule',
      rule: 'bash(rm:*)',
    })
    expect(parseDecision({ callId: 'c', decision: 'maybe', scope: 'once' })).toBeUndefined()
    expect(parseDecision({ callId: 'c', decision: 'allow', scope: 'forever' })).toBeUndefined()
    expect(parseDecision({ decision: 'allow', scope: 'once' })).toBeUndefined()
    expect(parseDecision({ callId: 'c', decision: 'deny', scope: 'mode', mode: 'nope' })).toEqual({
      callId: 'c',
      decision: 'deny',
      scope: 'mode',
    })
    expect(parseDecision(null)).toBeUndefined()
    for (const decision of ['allow', 'deny'] as const) {
      for (const scope of ['once', 'always', 'rule', 'mode'] as const) {
        for (const extra of [
          {},
          { rule: 'bash(npm test:*)' },
          { rule: 'edit(src/a.ts)', file: '/repo/.keel/settings.json' },
          { mode: 'auto' as const },
          { interrupted: true },
        ]) {
          // Every decision the log can hold reads back whole, so the page's words are describeDecision's.
          const data = { callId: 'c', decision, scope, ...extra }
          expect(parseDecision(data)).toEqual(data)
        }
      }
    }
  })
})
