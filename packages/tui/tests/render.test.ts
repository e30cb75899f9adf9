import { describe, expect, test } from 'vitest'
import type { DiffDetails, SessionEvent } from '@keel/session'
import { DIFF_COLLAPSED_LINES, diffRows, renderDiff } from '../src/diff-view.ts'
import { foldEvents } from '@keel/door/transcript'
import { Footer, usageText } from '../src/footer.ts'
import { StatusLine } from '../src/status.ts'
import { costLabel } from '@keel/session/cost'
import { retryText } from '@keel/llm/retry-text'
import { HIGHLIGHT_MAX_CHARS, highlightCode, loadHighlighter } from '../src/highlight.ts'
import { renderMarkdown } from '../src/markdown.ts'
import { TranscriptView, withoutToolName } from '../src/transcript.ts'
import { plain, plainLines } from './support.ts'

const SGR = /\x1b\[[0-9;]*m/g
const GREEN = '\x1b[32m'
const RED = '\x1b[31m'

/** No control character is left once our own SGR codes are taken out. */
function expectInert(lines: readonly string[]): void {
  for (const line of lines) expect(line.replace(SGR, '')).not.toMatch(/[\x00-\x1f\x7f-\x9f]/)
}

describe('Markdown to terminal lines', () => {
  test('headings, emphasis, lists, quotes, tables and code spans are drawn, not shown as syntax', () => {
    const lines = renderMarkdown(
      [
        '## Plan',
        '',
        'Some **bold**, *em* and `code`.',
        '',
        '- one',
        '- two',
        '',
        '> quoted',
        '',
        '| a | b |',
        '|---|---|',
        '| 1 | 2 |',
      ].join('\n'),
      60,
    )
    const text = plainLines(lines)
    expect(text).toContain('  Plan')
    expect(text).toContain('  Some bold, em and code.')
    expect(text).toContain('  - one')
    expect(text).toContain('  │ quoted')
    expect(text).toContain('  │ 1 │ 2 │')
    expect(text.join('\n')).not.toMatch(/\*\*|##|\|---/)
    const heading = lines.find((line) => plain(line).includes('Plan'))!
    expect(heading).toContain('\x1b[1m')
    const body = lines.find((line) => plain(line).includes('bold'))!
    expect(body).toContain('\x1b[1mbold\x1b[22m')
    expect(body).toContain('\x1b[3mem\x1b[23m')
    expect(body).toContain('\x1b[33mcode\x1b[39m')
  })

  test('a link shows its text and its URL and is never an OSC 8 hyperlink', () => {
    const lines = renderMarkdown('See [the docs](https://example.com/x) now.', 80)
    expect(plainLines(lines)).toContain('  See the docs (https://example.com/x) now.')
    expect(lines.join('')).not.toContain('\x1b]8')
  })

  test('fenced code is highlighted by language once the grammars load, and is plain before', async () => {
    const code = 'const x = "s" // note'
    const before = highlightCode(code, 'ts')
    expect(plainLines(before)).toEqual([code])
    await loadHighlighter()
    const lines = renderMarkdown(`\`\`\`ts\n${code}\n\`\`\``, 80)
    expect(plainLines(lines)).toEqual(['  ```ts', `    ${code}`, '  ```'])
    const line = lines[1]!
    expect(line).toContain('\x1b[35mconst\x1b[39m')
    expect(line).toContain(`${GREEN}"s"\x1b[39m`)
    expect(line).toContain('\x1b[90m// note\x1b[39m')
    // No language named: no guessing, the block is drawn plain in the code colour.
    expect(highlightCode('const x = 1')).toEqual(['\x1b[33mconst x = 1\x1b[39m'])
  })

  test('code longer than the highlight limit stays plain (highlighting is synchronous), and a repeat is the same lines', async () => {
    await loadHighlighter()
    const long = 'const x = 1\n'.repeat(Math.ceil(HIGHLIGHT_MAX_CHARS / 12) + 1)
    expect(highlightCode(long, 'ts').every((line) => !line.includes('\x1b[35m'))).toBe(true)
    const first = highlightCode('let y = 2', 'ts')
    expect(first[0]).toContain('\x1b[35mlet\x1b[39m')
    first[0] = 'changed by a caller'
    expect(highlightCode('let y = 2', 'ts')[0]).toContain('\x1b[35mlet\x1b[39m')
  })

  test('raw HTML stays text, and control characters from the model (in prose, code and entities) are inert', async () => {
    await loadHighlighter()
    const evil = 'ESC \x1b]0;pwned\x07 CSI \x1b[2J C1 \u009b31m'
    const lines = renderMarkdown(
      [
        `<script>alert(1)</script> <b>bold?</b> ${evil}`,
        '',
        '```js',
        `let s = "${evil}"`,
        '```',
        '',
        'x &#27;[31m y',
      ].join('\n'),
      100,
    )
    expectInert(lines)
    const text = plainLines(lines).join('\n')
    expect(text).toContain('<script>alert(1)</script> <b>bold?</b> ESC ␛]0;pwned␇ CSI ␛[2J C1 \\x9b31m')
    expect(text).toContain('let s = "ESC ␛]0;pwned␇')
  })
})

const details = (hunks: DiffDetails['hunks'], extra: Partial<DiffDetails> = {}): DiffDetails => ({
  kind: 'diff',
  path: 'a.ts',
  created: false,
  added: hunks.flatMap((h) => h.lines).filter((l) => l[0] === '+').length,
  removed: hunks.flatMap((h) => h.lines).filter((l) => l[0] === '-').length,
  hunks,
  omitted: 0,
  ...extra,
})

describe('diff rows', () => {
  test('rows are numbered in the file they belong to, hunks apart, with the no-newline note', () => {
    const rows = diffRows(
      details([
        { oldStart: 7, oldLines: 3, newStart: 7, newLines: 4, lines: [' keep', '-old', '+new', '+more', ' tail'] },
        { oldStart: 40, oldLines: 1, newStart: 41, newLines: 1, lines: ['-x', '\\ No newline at end of file', '+y'] },
      ]),
    )
    expect(rows).toEqual([
      { kind: 'context', line: 7, text: 'keep' },
      { kind: 'del', line: 8, text: 'old' },
      { kind: 'add', line: 8, text: 'new' },
      { kind: 'add', line: 9, text: 'more' },
      { kind: 'context', line: 10, text: 'tail' },
      { kind: 'gap' },
      { kind: 'del', line: 40, text: 'x' },
      { kind: 'note', text: '\\ No newline at end of file' },
      { kind: 'add', line: 41, text: 'y' },
    ])
    // A new file: its side starts after line 0.
    expect(diffRows(details([{ oldStart: 0, oldLines: 0, newStart: 1, newLines: 1, lines: ['+a'] }]))).toEqual([
      { kind: 'add', line: 1, text: 'a' },
    ])
  })

  test('added lines are green, removed red, numbers dim; file text is escaped', () => {
    const lines = renderDiff(
      details([{ oldStart: 1, oldLines: 2, newStart: 1, newLines: 2, lines: [' a', '-b \x1b[2J', '+c\tx'] }]),
      60,
      false,
    )
    expect(plainLines(lines)).toEqual(['    1   a', '    2 - b ␛[2J', '    2 + c    x'])
    expect(lines[1]).toContain(`${RED}- b ␛[2J\x1b[39m`)
    expect(lines[2]).toContain(`${GREEN}+ c    x\x1b[39m`)
    expect(lines[1]).toContain('\x1b[2m2\x1b[22m')
    expectInert(lines)
  })

  test(`past ${DIFF_COLLAPSED_LINES} rows the diff is cut with a hint until it is expanded`, () => {
    const long = details([
      {
        oldStart: 0,
        oldLines: 0,
        newStart: 1,
        newLines: 100,
        lines: Array.from({ length: 100 }, (_, i) => `+line ${i + 1}`),
      },
    ])
    const collapsed = plainLines(renderDiff(long, 60, false))
    expect(collapsed).toHaveLength(DIFF_COLLAPSED_LINES + 1)
    expect(collapsed.at(-1)).toBe('    … 60 more diff lines  ctrl+o to expand')
    const expanded = plainLines(renderDiff(long, 60, true))
    expect(expanded).toHaveLength(100)
    expect(expanded.at(-1)).toBe('    100 + line 100')
    expect(plainLines(renderDiff({ ...long, omitted: 7 }, 60, true)).at(-1)).toBe(
      '    … 7 more diff lines were not kept',
    )
  })
})

/** A transcript over a hand-written log: one tool call and its result. */
function toolCard(
  name: string,
  args: object,
  result: { text: string; isError: boolean; details?: unknown },
  expanded = false,
): string[] {
  const events = [
    { type: 'turn/start', seq: 0, time: 0, data: { turn: 1, trigger: 'prompt' } },
    { type: 'step/start', seq: 1, time: 0, data: { turn: 1, step: 1 } },
    {
      type: 'tool/call',
      seq: 2,
      time: 0,
      data: { turn: 1, step: 1, callId: 'c1', name, arguments: JSON.stringify(args) },
    },
    {
      type: 'tool/result',
      seq: 3,
      time: 1200,
      data: {
        turn: 1,
        step: 1,
        callId: 'c1',
        content: [{ type: 'text', text: result.text }],
        isError: result.isError,
        ...(result.details ? { details: result.details } : {}),
      },
    },
  ]
  const view = new TranscriptView({
    present: (tool, raw) => ({ title: `${tool[0]!.toUpperCase()}${tool.slice(1)} ${JSON.parse(raw).path}` }),
  })
  view.reset(foldEvents(events as never))
  view.expanded = expanded
  return view.render(80)
}

describe('tool cards', () => {
  const edit = details([{ oldStart: 1, oldLines: 2, newStart: 1, newLines: 2, lines: [' a', '-b', '+c'] }])

  test('one label per tool, the diff from details with its counts, and no diff text parsed', () => {
    const lines = toolCard(
      'edit',
      { path: 'a.ts' },
      { text: 'Edited a.ts: summary only.', isError: false, details: edit },
    )
    expect(plainLines(lines)).toEqual(['', '● edit a.ts  +1 -1  1.2s', '    1   a', '    2 - b', '    2 + c'])
    expect(withoutToolName('Edit a.ts', 'edit')).toBe('a.ts')
    expect(withoutToolName('edit', 'edit')).toBe('')
    expect(withoutToolName('Run tests', 'bash')).toBe('Run tests')
  })

  test('a result logged without details (an older session) shows its text as before', () => {
    const text = 'Edited a.ts: 1 replacement at line 2 (+1 -1 lines).\n--- a.ts\n+++ a.ts\n@@ -1,2 +1,2 @@\n a\n-b\n+c'
    const lines = plainLines(toolCard('edit', { path: 'a.ts' }, { text, isError: false }))
    expect(lines[1]).toBe('● edit a.ts  1.2s')
    expect(lines.slice(2)).toEqual([
      '  │ … 3 earlier lines  ctrl+o to expand',
      '  │ @@ -1,2 +1,2 @@',
      '  │  a',
      '  │ -b',
      '  │ +c',
    ])
  })

  test('a cancelled call reads "cancelled", from details or from an older log\'s wording', () => {
    const cancelled = toolCard(
      'bash',
      { path: 'x' },
      {
        text: 'Error: the turn was cancelled before this tool call started.',
        isError: true,
        details: { kind: 'cancelled' },
      },
    )
    expect(plainLines(cancelled)).toEqual(['', '● bash x  cancelled 1.2s'])
    expect(cancelled[1]).toContain('\x1b[33mcancelled')
    const old = toolCard('bash', { path: 'x' }, { text: 'partial\n[cancelled by the user]', isError: true })
    expect(plainLines(old)).toEqual(['', '● bash x  cancelled 1.2s', '  │ partial', '  │ [cancelled by the user]'])
  })

  test('an error shows its reason on one line, and in full, wrapped, when expanded', () => {
    const reason = `Error: ${'a long reason '.repeat(12).trim()}`
    const collapsed = plainLines(toolCard('read', { path: 'x' }, { text: reason, isError: true }))
    expect(collapsed).toHaveLength(3)
    expect(collapsed[2]!.endsWith('…')).toBe(true)
    const expanded = plainLines(toolCard('read', { path: 'x' }, { text: reason, isError: true }, true))
    expect(expanded.slice(2).join(' ').replace(/\s+/g, ' ').trim()).toBe(`✗ ${reason}`)
    expect(expanded.length).toBeGreaterThan(3)
  })

  test('a command that exited non-zero, timed out or was killed is a failure: red ✗ and how it ended; exit 0 is green', () => {
    const card = (details: unknown, isError = false) =>
      toolCard('bash', { path: 'x' }, { text: 'building\n[exit code 3 · 0.1 s]', isError, details })
    const failed = card({ kind: 'command', exit: { kind: 'exited', code: 3 } })
    expect(failed[1]).toContain(`${RED}●`)
    expect(failed[1]).toContain(`${RED}✗ exit 3`)
    expect(plainLines(failed).join('\n')).toContain('building')
    expect(plain(card({ kind: 'command', exit: { kind: 'timeout', seconds: 120 } }, true)[1]!)).toContain(
      '✗ timed out after 120 s',
    )
    expect(plain(card({ kind: 'command', exit: { kind: 'killed', signal: 'SIGKILL' } })[1]!)).toContain(
      '✗ killed by SIGKILL',
    )
    const ok = card({ kind: 'command', exit: { kind: 'exited', code: 0 } })
    expect(ok[1]).toContain(`${GREEN}●`)
    expect(plain(ok[1]!)).not.toContain('✗')
  })
})

describe('footer', () => {
  test('model, session tokens and the share of the context window the latest request filled', () => {
    expect(usageText({ input: 11_000, output: 1_300, context: 11_600 }, 128_000)).toBe('12.3k tok · 9% of 128k')
    // No window known, or no usage reported yet: the tokens alone.
    expect(usageText({ input: 11_000, output: 1_300, context: 11_600 })).toBe('12.3k tok')
    expect(usageText({ input: 0, output: 0 }, 200_000)).toBe('0 tok')
    const footer = new Footer({
      model: 'openai/gpt-4o',
      cwd: '/work/x',
      sessionId: '0123456789abcdef',
      tokens: { input: 900, output: 100, context: 1000 },
      contextWindow: 200_000,
    })
    expect(plain(footer.render(120)[0]!)).toBe('openai/gpt-4o · 1.0k tok · 1% of 200k · session 01234567 · /work/x')
    footer.info.mode = 'auto'
    expect(plain(footer.render(140)[0]!)).toBe(
      'openai/gpt-4o · 1.0k tok · 1% of 200k · session 01234567 · auto mode · /work/x',
    )
  })

  test('the fold keeps the latest reply as the context in use', () => {
    const reply = (seq: number, input: number, output: number) => ({
      type: 'assistant/message',
      seq,
      time: 0,
      data: { turn: 1, step: 1, message: { role: 'assistant', content: [] }, usage: { input, output } },
    })
    const state = foldEvents([reply(0, 100, 10), reply(1, 300, 20)] as never)
    expect(state.tokens).toEqual({ input: 400, output: 30, context: 320 })
  })

  test('the footer shows the dollars the log holds; the status line shows a retry wait until the reply', () => {
    const at = (seq: number, type: string, data: object) => ({ type, seq, time: 0, data })
    const retry = { provider: 'anthropic', kind: 'rate-limit', attempt: 2, attempts: 6, waitMs: 7000, message: '429' }
    const events = [
      at(0, 'model/retry', { turn: 1, step: 1, ...retry }),
      at(1, 'assistant/message', {
        turn: 1,
        step: 1,
        message: { role: 'assistant', content: [] },
        usage: { input: 10, output: 1 },
        costUsd: 0.25,
      }),
    ]
    const waiting = foldEvents(events.slice(0, 1) as never)
    expect(waiting.retry && retryText(waiting.retry)).toBe('rate limited by anthropic, retrying in 7 s (2/6)')
    const status = new StatusLine(() => 1000)
    status.runningSince = 0
    status.retry = retryText(waiting.retry!)
    expect(plain(status.render(120).join('\n'))).toContain('rate limited by anthropic, retrying in 7 s (2/6)')
    const state = foldEvents(events as never)
    expect(state.retry).toBeUndefined()
    const footer = new Footer({
      model: 'anthropic/claude-sonnet-4-5',
      cwd: '/w',
      sessionId: '0123456789abcdef',
      tokens: state.tokens,
      cost: costLabel(state.cost),
    })
    expect(plain(footer.render(120)[0]!)).toBe('anthropic/claude-sonnet-4-5 · 11 tok · $0.25 · session 01234567 · /w')
  })
})

describe('open tasks at the end of a turn', () => {
  test("the line under the turn uses @keel/todo's wording (openTasksNotice), escaped", () => {
    let seq = 0
    const event = (type: string, data: object) => ({ type, seq: seq++, time: 0, data }) as SessionEvent
    const state = foldEvents([
      event('turn/start', { turn: 1, trigger: 'prompt' }),
      event('todo/write', {
        todos: [
          { content: 'Ask \x1b[2Jthe user', status: 'in_progress' },
          { content: 'Done', status: 'completed' },
          { content: 'Finish', status: 'pending' },
        ],
      }),
      event('turn/end', { turn: 1, reason: 'completed' }),
    ])
    const view = new TranscriptView({ present: () => ({ title: '' }) })
    view.reset(state)
    expect(plainLines(view.render(120))).toContain('  ◌ the turn ended with 2 open tasks: "Ask ␛[2Jthe user", "Finish"')
  })
})
