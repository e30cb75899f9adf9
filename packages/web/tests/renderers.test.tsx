// @vitest-environment happy-dom
// The transcript's renderers: Markdown (react-markdown), the edit diff parser and view, and the tool row's states.
import { renderToStaticMarkup } from 'react-dom/server'
import { isCancelledResult } from '@keel/door/transcript'
import { describe, expect, test } from 'vitest'
import { ToolRow, summaryOf } from '../src/client/components/ToolRow.tsx'
import type { DiffDetails } from '@keel/session'
import { lastLines, rowsOf } from '../src/client/diff.ts'
import { HIGHLIGHT_MAX_CHARS, highlighted } from '../src/client/markdown/CodeBlock.tsx'
import { highlight } from '../src/client/markdown/highlight.ts'
import { Markdown, safeHref } from '../src/client/markdown/Markdown.tsx'
import { foldUsage, type TranscriptItem } from '../src/client/store.ts'

function toolItem(
  name: string,
  args: unknown,
  result?: { isError: boolean; text: string; details?: DiffDetails | { kind: 'cancelled' } },
  title?: string,
): Extract<TranscriptItem, { kind: 'tool' }> {
  return {
    kind: 'tool',
    key: 'e1',
    seq: 1,
    callId: 'c1',
    name,
    arguments: JSON.stringify(args),
    status: !result
      ? 'running'
      : !result.isError
        ? 'done'
        : isCancelledResult(result.text, result.details)
          ? 'cancelled'
          : 'error',
    ...(result ? { result } : {}),
    ...(title ? { view: { title, kind: 'other' } } : {}),
  }
}

function dom(html: string): Document {
  return new DOMParser().parseFromString(`<body>${html}</body>`, 'text/html')
}

describe('Markdown', () => {
  const TEXT = [
    '# Title',
    '',
    'Some **bold**, *em* and `code`.',
    '',
    '- one',
    '- two',
    '',
    '1. first',
    '',
    '> quoted',
    '',
    '| a | b |',
    '|---|---|',
    '| 1 | 2 |',
    '',
    '[site](https://example.com) [bad](javascript:alert(1)) [rel](api/session.list) [mail](mailto:a@b.c)',
    '',
    '![pic](https://example.com/x.png)',
    '',
    '<img src=x onerror=alert(1)> <script>alert(2)</script>',
    '',
    '<div onclick="x()">block html</div>',
    '',
    '```ts',
    'const a = 1',
    '```',
  ].join('\n')
  const doc = dom(renderToStaticMarkup(<Markdown text={TEXT} />))

  test('renders headings, emphasis, lists, block quotes, tables and code', () => {
    expect(doc.querySelector('h1')?.textContent).toBe('Title')
    expect(doc.querySelector('strong')?.textContent).toBe('bold')
    expect(doc.querySelector('em')?.textContent).toBe('em')
    expect(doc.querySelector('code.code-span')?.textContent).toBe('code')
    expect(doc.querySelectorAll('ul > li').length).toBe(2)
    expect(doc.querySelectorAll('ol > li').length).toBe(1)
    expect(doc.querySelector('blockquote')?.textContent?.trim()).toBe('quoted')
    expect([...doc.querySelectorAll('table th')].map((th) => th.textContent)).toEqual(['a', 'b'])
    expect(doc.querySelector('.table-scroll > table')).not.toBeNull()
    const block = doc.querySelector('[data-testid="code-block"]')
    expect(block?.querySelector('pre > code')?.textContent).toBe('const a = 1')
    expect(block?.querySelector('.code-language')?.textContent).toBe('ts')
  })

  test('keeps only http(s) and mailto links, opened in a new tab without opener or referrer', () => {
    const links = [...doc.querySelectorAll('a')]
    expect(links.map((a) => a.getAttribute('href'))).toEqual([
      'https://example.com',
      'mailto:a@b.c',
      'https://example.com/x.png',
    ])
    for (const a of links) {
      expect(a.getAttribute('target')).toBe('_blank')
      expect(a.getAttribute('rel')).toBe('noopener noreferrer')
    }
    expect(doc.body.textContent).toContain('bad')
    expect(safeHref('javascript:alert(1)')).toBe('')
    expect(safeHref(' JAVASCRIPT:x')).toBe('')
    expect(safeHref('data:text/html,x')).toBe('')
    expect(safeHref('//evil.example/x')).toBe('')
    expect(safeHref('HTTPS://ok.example')).toBe('HTTPS://ok.example')
  })

  test('raw HTML stays text: no element is made of it, and images are never loaded', () => {
    expect(doc.querySelector('img')).toBeNull()
    expect(doc.querySelector('script')).toBeNull()
    expect(doc.querySelector('[onclick]')).toBeNull()
    expect(doc.querySelector('[onerror]')).toBeNull()
    expect(doc.body.textContent).toContain('<img src=x onerror=alert(1)>')
    expect(doc.body.textContent).toContain('<script>alert(2)</script>')
    expect(doc.body.textContent).toContain('<div onclick="x()">block html</div>')
  })

  test('a fence without a language is still a code block, and long lines are left to scroll', () => {
    const html = renderToStaticMarkup(<Markdown text={'```\nplain\n```'} />)
    const block = dom(html).querySelector('[data-testid="code-block"]')
    expect(block?.textContent).toBe('plain')
    expect(block?.querySelector('.code-language')).toBeNull()
  })
})

describe('highlight', () => {
  test('makes React elements with hljs classes; the source stays text', () => {
    const doc = dom(renderToStaticMarkup(highlight('const a = "<img src=x onerror=alert(1)>"', 'ts')))
    expect(doc.querySelector('.hljs-keyword')?.textContent).toBe('const')
    expect(doc.querySelector('.hljs-string')?.textContent).toBe('"<img src=x onerror=alert(1)>"')
    expect(doc.querySelector('img')).toBeNull()
  })

  test('knows grammar aliases, and leaves an unknown language plain', () => {
    expect(highlight('ls -la', 'sh')).toBeDefined()
    expect(highlight('x', 'no-such-language')).toBeUndefined()
    expect(highlight('x', '')).toBeUndefined()
  })

  test('a code block longer than the limit is not highlighted (the page would freeze on it)', () => {
    expect(highlighted(highlight, 'const a = 1', 'ts')).toBeDefined()
    expect(highlighted(highlight, 'x'.repeat(HIGHLIGHT_MAX_CHARS + 1), 'ts')).toBeUndefined()
  })
})

// What packages/fs puts in an edit result's `details`, and the summary line its text starts with.
const EDIT_SUMMARY = 'Edited src/a.ts: 1 replacement at line 3 (+2 -1 lines).'
const EDIT_DETAILS: DiffDetails = {
  kind: 'diff',
  path: 'src/a.ts',
  created: false,
  added: 2,
  removed: 1,
  omitted: 0,
  hunks: [
    {
      oldStart: 1,
      oldLines: 4,
      newStart: 1,
      newLines: 5,
      lines: [' one', ' two', '-three', '+THREE', '+three and a half', ' four', '\\ No newline at end of file'],
    },
  ],
}

describe('diff rows from details', () => {
  test('reads rows with old and new line numbers', () => {
    expect(rowsOf(EDIT_DETAILS)).toEqual([
      { kind: 'hunk', text: '@@ -1,4 +1,5 @@' },
      { kind: 'context', text: 'one', oldLine: 1, newLine: 1 },
      { kind: 'context', text: 'two', oldLine: 2, newLine: 2 },
      { kind: 'del', text: 'three', oldLine: 3 },
      { kind: 'add', text: 'THREE', newLine: 3 },
      { kind: 'add', text: 'three and a half', newLine: 4 },
      { kind: 'context', text: 'four', oldLine: 4, newLine: 5 },
      { kind: 'note', text: '\\ No newline at end of file' },
    ])
  })

  test('numbers each hunk from its own header; a new file counts from 1; lines the log left out are a note', () => {
    const rows = rowsOf({
      ...EDIT_DETAILS,
      omitted: 3,
      hunks: [
        { oldStart: 10, oldLines: 1, newStart: 10, newLines: 1, lines: ['-x', '+y'] },
        { oldStart: 40, oldLines: 2, newStart: 40, newLines: 2, lines: [' same', '-p', '+q'] },
      ],
    })
    expect(rows.find((row) => row.kind === 'del')).toEqual({ kind: 'del', text: 'x', oldLine: 10 })
    expect(rows.filter((row) => row.kind === 'add').map((row) => row.kind === 'add' && row.newLine)).toEqual([10, 41])
    expect(rows.at(-1)).toEqual({ kind: 'note', text: '… 3 more diff lines were not kept' })
    const created = rowsOf({
      ...EDIT_DETAILS,
      hunks: [{ oldStart: 0, oldLines: 0, newStart: 1, newLines: 2, lines: ['+a', '+b'] }],
    })
    expect(created.slice(1)).toEqual([
      { kind: 'add', text: 'a', newLine: 1 },
      { kind: 'add', text: 'b', newLine: 2 },
    ])
  })
})

describe('tool rows', () => {
  test('one label per tool: the title loses the tool name it repeats', () => {
    expect(summaryOf(toolItem('edit', {}, undefined, 'Edit a.txt'))).toBe('a.txt')
    expect(summaryOf(toolItem('grep', {}, undefined, 'Grep /x/ in src'))).toBe('/x/ in src')
    expect(summaryOf(toolItem('bash', {}, undefined, 'npm test'))).toBe('npm test')
    expect(summaryOf(toolItem('custom', {}, undefined, 'custom'))).toBe('')
    const html = renderToStaticMarkup(<ToolRow item={toolItem('edit', { path: 'a.txt' }, undefined, 'Edit a.txt')} />)
    const summary = dom(html).querySelector('summary')!.textContent
    expect(summary).toBe('edita.txt')
  })

  test('an edit result renders coloured diff rows from its details without a click, collapsed past 40 rows', () => {
    const doc = dom(
      renderToStaticMarkup(
        <ToolRow
          item={toolItem('edit', { path: 'src/a.ts' }, { isError: false, text: EDIT_SUMMARY, details: EDIT_DETAILS })}
        />,
      ),
    )
    const diff = doc.querySelector('[data-testid="diff"]')!
    expect(diff.closest('details')).toBeNull() // outside the collapsed body
    expect(diff.querySelector('.diff-note')?.textContent).toBe(EDIT_SUMMARY)
    expect(diff.querySelectorAll('tr.diff-add').length).toBe(2)
    expect(diff.querySelectorAll('tr.diff-del').length).toBe(1)
    expect([...diff.querySelector('tr.diff-del')!.querySelectorAll('td')].map((td) => td.textContent)).toEqual([
      '3',
      '',
      '-three',
    ])
    expect(doc.querySelector('[data-testid="diff-toggle"]')).toBeNull()

    const long: DiffDetails = {
      ...EDIT_DETAILS,
      added: 45,
      removed: 0,
      hunks: [
        {
          oldStart: 0,
          oldLines: 0,
          newStart: 1,
          newLines: 45,
          lines: Array.from({ length: 45 }, (_, i) => `+line ${i}`),
        },
      ],
    }
    const collapsed = dom(
      renderToStaticMarkup(
        <ToolRow item={toolItem('write', { path: 'b' }, { isError: false, text: 'Created b.', details: long })} />,
      ),
    )
    expect(collapsed.querySelectorAll('tr.diff-row').length).toBe(40)
    expect(collapsed.querySelector('[data-testid="diff-toggle"]')?.textContent).toBe('Show all 46 lines')
  })

  test('a result logged without details (an older session) shows its text, with no diff guessed from it', () => {
    const text = `${EDIT_SUMMARY}\n--- src/a.ts\n+++ src/a.ts\n@@ -1,1 +1,1 @@\n-a\n+b`
    const doc = dom(
      renderToStaticMarkup(<ToolRow item={toolItem('edit', { path: 'src/a.ts' }, { isError: false, text })} />),
    )
    expect(doc.querySelector('[data-testid="diff"]')).toBeNull()
    expect(doc.querySelector('[data-testid="tool-preview"]')?.textContent).toContain('+b')
  })

  test.each([
    'Error: the turn was cancelled before this tool call started.',
    'Error: tool call aborted before it started',
    'Error: tool call aborted',
    'partial output\n[cancelled by the user]',
  ])('a cancelled call reads cancelled, not error: %j', (text) => {
    expect(isCancelledResult(text)).toBe(true)
    expect(isCancelledResult('Error: anything', { kind: 'cancelled' })).toBe(true)
    const doc = dom(
      renderToStaticMarkup(<ToolRow item={toolItem('bash', { command: 'sleep 9' }, { isError: true, text })} />),
    )
    expect(doc.querySelector('[data-testid="tool-row"]')!.getAttribute('data-state')).toBe('cancelled')
    expect(doc.querySelector('[data-testid="tool-cancelled"]')?.textContent).toBe('cancelled')
    expect(doc.querySelector('[data-testid="tool-error"]')).toBeNull()
  })

  test('an error shows its first line in the row, with a toggle for the whole text', () => {
    expect(isCancelledResult('Error: exit code 1\n[exit code 1 · 0.1 s]')).toBe(false)
    const text = 'Error: first line\nsecond line\nthird line'
    const doc = dom(
      renderToStaticMarkup(<ToolRow item={toolItem('bash', { command: 'x' }, { isError: true, text })} />),
    )
    expect(doc.querySelector('[data-testid="tool-row"]')!.getAttribute('data-state')).toBe('error')
    const error = doc.querySelector('[data-testid="tool-error"]')!
    expect(error.closest('details')).toBeNull()
    expect(error.querySelector('.tool-error-text')?.textContent).toBe('Error: first line')
    expect(error.querySelector('button')?.getAttribute('aria-expanded')).toBe('false')
  })

  test('the last lines of output show without a click, live and finished', () => {
    const output = Array.from({ length: 10 }, (_, i) => `line ${i}`).join('\n')
    expect(lastLines(`${output}\n\n`, 4)).toBe('line 6\nline 7\nline 8\nline 9')
    const running = dom(renderToStaticMarkup(<ToolRow item={toolItem('bash', { command: 'x' })} output={output} />))
    const preview = running.querySelector('[data-testid="tool-preview"]')!
    expect(preview.closest('details')).toBeNull()
    expect(preview.textContent).toBe('line 6\nline 7\nline 8\nline 9')
    const done = dom(
      renderToStaticMarkup(
        <ToolRow
          item={toolItem('bash', { command: 'x' }, { isError: false, text: `${output}\n[exit code 0 · 0.1 s]` })}
        />,
      ),
    )
    expect(done.querySelector('[data-testid="tool-preview"]')?.textContent).toBe(
      'line 7\nline 8\nline 9\n[exit code 0 · 0.1 s]',
    )
  })
})

describe('usage', () => {
  test('sums input and output over replies; the context is the latest reply', () => {
    const reply = (seq: number, usage?: { input: number; output: number }) =>
      ({
        event: {
          seq,
          ts: 0,
          type: 'assistant/message',
          data: { turn: 1, step: 1, message: { role: 'assistant', content: [] }, ...(usage ? { usage } : {}) },
        },
      }) as never
    let usage = foldUsage({ total: 0 }, reply(1, { input: 100, output: 20 }))
    usage = foldUsage(usage, reply(2))
    usage = foldUsage(usage, reply(3, { input: 150, output: 10 }))
    expect(usage).toEqual({ total: 280, context: 160 })
    // A total the host could not know (a session read from its file) is not restarted from zero.
    expect(foldUsage({ context: 5 }, reply(4, { input: 10, output: 1 }))).toEqual({ context: 11 })
  })
})
