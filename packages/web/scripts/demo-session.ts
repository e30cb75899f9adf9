// A scripted conversation that exercises every transcript renderer: Markdown (a heading, a table, a code fence, a
// link, raw HTML that must stay text), a plan, a bash call with a few lines of output and an edit with its diff.
// Used by the browser test (tests/render.browser.test.ts) and by scripts/screenshots.ts.
import { mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'

export const RAW_HTML = '<img src=x onerror=alert(1)> and <script>alert(2)</script>'

export const DEMO_REPLY = [
  '## What changed',
  '',
  'The greeting now takes a **name** and falls back to *world*; see `greet()` in `src/greet.ts`.',
  '',
  '| file | change | tests |',
  '| --- | --- | --- |',
  '| `src/greet.ts` | takes a name | 3 passed |',
  '| `README.md` | unchanged | n/a |',
  '',
  '```ts',
  'export function greet(name = "world"): string {',
  '  return `Hello, ${name}! This line is long on purpose so that it has to scroll inside its own block on a phone.`',
  '}',
  '```',
  '',
  '> Raw HTML in a reply stays text: ' + RAW_HTML,
  '',
  '- Run `npm test` to check it',
  '- Details: [the docs](https://example.com/docs)',
].join('\n')

const PLAN = (done: boolean) => [
  { content: 'Read src/greet.ts', status: 'completed' },
  { content: 'Let greet() take a name', status: done ? 'completed' : 'in_progress' },
  { content: 'Run the tests', status: done ? 'completed' : 'pending' },
]

/** Writes the project (one source file), the model script and a composition into `dir`; serve with cwd = dir. */
export function writeDemo(dir: string): { model: string; config: string } {
  mkdirSync(join(dir, 'src'), { recursive: true })
  writeFileSync(join(dir, 'src/greet.ts'), 'export function greet(): string {\n  return "Hello, world!"\n}\n')
  writeFileSync(
    join(dir, 'demo.json'),
    JSON.stringify({
      steps: [
        {
          text: 'Let me look at the code and make the change.',
          delayMs: 20,
          usage: { input: 14_200, output: 310 },
          toolCalls: [
            { name: 'todo_write', arguments: { todos: PLAN(false) } },
            {
              name: 'bash',
              arguments: {
                command: "printf 'building…\\ncompiled 12 files\\nlint: clean\\ntests: 3 passed\\ndone in 1.2 s\\n'",
              },
            },
            {
              name: 'edit',
              arguments: {
                path: 'src/greet.ts',
                old_string: 'export function greet(): string {\n  return "Hello, world!"',
                new_string: 'export function greet(name = "world"): string {\n  return `Hello, ${name}!`',
              },
            },
          ],
        },
        {
          delayMs: 20,
          usage: { input: 15_900, output: 120 },
          toolCalls: [{ name: 'todo_write', arguments: { todos: PLAN(true) } }],
        },
        { text: DEMO_REPLY, delayMs: 15, usage: { input: 16_400, output: 420 } },
      ],
    }),
  )
  writeFileSync(
    join(dir, 'keel.yml'),
    [
      "- { id: session, name: '@keel/session' }",
      "- { id: llm, name: '@keel/llm' }",
      "- { id: tools, name: '@keel/tools' }",
      "- { id: agent, name: '@keel/agent' }",
      "- { id: shell, name: '@keel/shell' }",
      "- { id: fs, name: '@keel/fs' }",
      "- { id: todo, name: '@keel/todo' }",
      '- id: compaction',
      "  name: '@keel/compaction'",
      '  config: { auto: false, contextWindow: 200000 }',
    ].join('\n') + '\n',
  )
  return { model: 'scripted/demo.json', config: join(dir, 'keel.yml') }
}
