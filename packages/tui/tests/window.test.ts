// A long session draws a bounded window of its transcript: the last few screens, earlier entries on PageUp.
import { afterEach, describe, expect, test, vi } from 'vitest'
import { foldEvents } from '@keel/door/transcript'
import { makeKeel, type Keel } from '../../../test-support/harness.ts'
import { KeelApp } from '../src/app.ts'
import { highlighterLoaded, loadHighlighter } from '../src/highlight.ts'
import { TranscriptView } from '../src/transcript.ts'
import { fillSession, plain, RecordingTerminal } from './support.ts'

const PAGE_UP = '\x1b[5~'
let keel: Keel | undefined
let app: KeelApp | undefined
afterEach(async () => {
  await app?.quit()
  await keel?.dispose()
  app = keel = undefined
})

describe('the transcript window', () => {
  test('a resumed long session draws its last entries; PageUp draws back to the first', async () => {
    keel = await makeKeel()
    const agent = keel.agent()
    fillSession(agent.session, 300)
    const terminal = new RecordingTerminal(100, 40)
    app = new KeelApp({ ctx: keel.ctx, terminal, agent, cwd: keel.cwd, modelSpec: 'scripted/test', version: '0' })
    void app.run()
    const frame = () => plain(app!.frame(100).join('\n'))
    const first = frame()
    expect(first).toContain('Answer 300.')
    expect(first).not.toContain('Question 1\n')
    expect(first).toMatch(/… \d+ earlier entries not drawn/)
    // A bounded window: a few screens of a 40-row terminal, not 600 entries' worth.
    expect(app.frame(100).length).toBeLessThan(40 * 6)
    let pages = 0
    while (app.transcript.hidden > 0 && pages++ < 100) terminal.type(PAGE_UP)
    const all = frame()
    expect(all).toContain('Question 1\n')
    expect(all).toContain('Answer 1.')
    expect(all).toContain('Answer 300.')
    expect(all).not.toContain('earlier entries not drawn')
    // Several presses, each a few screens: the window grew in steps, not all at once.
    expect(pages).toBeGreaterThan(2)
  })

  test('PageUp in a multi-line editor stays the editor’s; a short session draws everything', async () => {
    keel = await makeKeel()
    const agent = keel.agent()
    fillSession(agent.session, 3)
    const terminal = new RecordingTerminal(100, 40)
    app = new KeelApp({ ctx: keel.ctx, terminal, agent, cwd: keel.cwd, modelSpec: 'scripted/test', version: '0' })
    void app.run()
    expect(app.transcript.hidden).toBe(0)
    expect(plain(app.frame(100).join('\n'))).toContain('Question 1\n')
    await app.quit()
    await keel.dispose()
    keel = await makeKeel()
    const long = keel.agent()
    fillSession(long.session, 100)
    app = new KeelApp({ ctx: keel.ctx, terminal, agent: long, cwd: keel.cwd, modelSpec: 'scripted/test', version: '0' })
    void app.run()
    app.frame(100)
    const hidden = app.transcript.hidden
    expect(hidden).toBeGreaterThan(0)
    app.editor.setText('first line\nsecond line')
    terminal.type(PAGE_UP)
    expect(app.transcript.hidden).toBe(hidden)
    app.editor.setText('')
    terminal.type(PAGE_UP)
    expect(app.transcript.hidden).toBeLessThan(hidden)
  })

  test('the highlighter arriving redraws only the entries that hold code', async () => {
    const view = new TranscriptView({ present: () => ({ title: '' }), rows: () => 10 })
    keel = await makeKeel()
    const agent = keel.agent()
    fillSession(agent.session, 4, (turn) => (turn === 2 ? 'Code:\n\n```ts\nconst x = 1\n```' : `Answer ${turn}.`))
    // A file of its own process (vitest.config.ts): no other test has loaded the highlighter yet.
    expect(highlighterLoaded()).toBe(false)
    view.reset(foldEvents(agent.session.events))
    const before = view.render(80)
    // renderAssistant is private: the spy reaches it through the prototype.
    const proto = TranscriptView.prototype as unknown as { renderAssistant(text: string): string[] }
    const drawn = vi.spyOn(proto, 'renderAssistant')
    await loadHighlighter()
    const after = view.render(80)
    // The live tail (empty here) renders every frame; of the entries only the one with code is drawn again.
    expect(drawn.mock.calls.map((call) => call[0]).filter(Boolean)).toEqual(['Code:\n\n```ts\nconst x = 1\n```'])
    drawn.mockRestore()
    expect(after.join('\n')).not.toBe(before.join('\n'))
  })
})
