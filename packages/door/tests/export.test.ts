import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { expect, test } from 'vitest'
import type { SessionEvent, SessionHeader } from '@keel/session'
import { type ExportSource, exportSession } from '../src/export.ts'

// A real run of the loop (`keel -p` with a scripted model, then `keel -p -c`): a plan written and updated, a bash
// call allowed by a rule whose output is long and holds an escape code, one denied in ask mode, a subagent with a
// plan of its own, and a second turn.
const fixtures = join(import.meta.dirname, 'fixtures/export')
const PARENT = '203a26cd-c536-414b-b1a0-0c3b562e207f'

function source(id: string): ExportSource | undefined {
  let text: string
  try {
    text = readFileSync(join(fixtures, `${id}.jsonl`), 'utf8')
  } catch {
    return undefined
  }
  const [head, ...lines] = text.split('\n').filter(Boolean)
  return {
    header: JSON.parse(head!) as SessionHeader,
    events: lines.map((line) => JSON.parse(line) as SessionEvent),
  }
}

test('Markdown: the fixture transcript, plans at each turn end, decisions, the subagent nested, long output cut', () => {
  const markdown = exportSession(source(PARENT)!, 'markdown', { child: source, cut: 300 })
  expect(markdown).toBe(readFileSync(join(fixtures, 'session.md'), 'utf8'))
  expect(markdown).toContain('Permission: ✓ allowed by rule bash(printf:*)')
  expect(markdown).toContain('Permission: ✗ denied by ask mode')
  expect(markdown).toMatch(/_\(cut: \d+ of \d+ characters not shown\)_/)
  expect(markdown).toContain('### Subagent: Tidy (completed)\n\n> ### Turn 1')
  expect(markdown).toContain('> **Plan 1/1** at the end of turn 1')
  expect(markdown).toContain('**Plan 1/2 · 1 in progress** at the end of turn 1')
  expect(markdown).toContain('## Turn 2')
  expect(markdown).toContain('# PARENT: look at \\<this\\> & that')
})

/** The fixture with a hostile answer: an escape code and markup, as a hand-edited log or an old version's may hold. */
function hostile(): ExportSource {
  const own = source(PARENT)!
  const answer = {
    type: 'assistant/message',
    seq: own.events.length,
    time: 0,
    data: {
      turn: 2,
      step: 2,
      message: {
        role: 'assistant',
        content: [{ type: 'text', text: 'x\u001b]0;owned\u0007 <script>alert(1)</script>' }],
      },
    },
  } as unknown as SessionEvent
  return { header: own.header, events: [...own.events, answer] }
}

test('Markdown shows an escape code, never sends it', () => {
  const markdown = exportSession(hostile(), 'markdown', { child: source })
  expect(markdown).not.toMatch(/[\u001b\u0007]/)
  expect(markdown).toContain('x␛]0;owned␇')
})

test('a subagent whose log cannot be read is named, and the rest is exported', () => {
  const markdown = exportSession(source(PARENT)!, 'markdown', { child: () => undefined })
  expect(markdown).toMatch(/_Session `1879b050-[0-9a-f-]+`: its session log could not be read\._/)
  expect(markdown).toContain('## Turn 2')
})

test('HTML: one self-contained page, no network, log text escaped as the web page shows it', () => {
  const html = exportSession(hostile(), 'html', { child: source })
  expect(html).toContain(
    `<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'">`,
  )
  expect(html).not.toMatch(/<(script|link|img|iframe)\b/i)
  expect(html).not.toMatch(/\b(src|href)=/i)
  expect(html).toContain('tidy &lt;b&gt;the&lt;/b&gt; output')
  expect(html).not.toContain('<b>the</b>')
  expect(html).toContain('x␛]0;owned␇ &lt;script&gt;alert(1)&lt;/script&gt;')
  expect(html).not.toMatch(/[\u001b\u0007]/)
  expect(html).toContain('<section class="subagent"><h3>Subagent: Tidy (completed)</h3>')
  expect(html).toContain('Permission: ✗ denied by ask mode')
  expect(html).toMatch(/\(cut: \d+ of \d+ characters not shown\)/)
})

test('a hostile log: a subagent naming its own session does not recurse, odd shapes do not throw', () => {
  const own = source(PARENT)!
  const looped: ExportSource = {
    header: own.header,
    events: own.events.map((event) =>
      event.type === 'subagent/start'
        ? ({ ...event, data: { ...event.data, sessionId: PARENT } } as SessionEvent)
        : event,
    ),
  }
  const markdown = exportSession(looped, 'markdown', { child: source })
  expect(markdown).toContain('not shown: nested too deep')
  const odd = { header: own.header, events: [{ type: 'user/message', seq: 0, time: 0, data: null }] as never }
  expect(() => exportSession(odd, 'html')).not.toThrow()
})
