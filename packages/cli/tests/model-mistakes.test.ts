// What the model is told when its call is nearly right (issue 33), through the real binary and the scripted model:
// an edit whose old_string differs from the file only in what read output hides, and a todo_write in another
// agent's shape. Each answer must name the difference, so one retry fixes it, and leave the file as it was.
import { spawnSync } from 'node:child_process'
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, expect, test } from 'vitest'

const root = join(import.meta.dirname, '../../..')
const scratch = mkdtempSync(join(tmpdir(), 'keel-mistakes-'))
afterAll(() => rmSync(scratch, { recursive: true, force: true }))

/** One print-mode run of the scripted steps; the tool results it logged, in order. */
function run(steps: unknown[], files: Record<string, string>) {
  const cwd = join(scratch, 'cwd')
  mkdirSync(cwd, { recursive: true })
  for (const [name, text] of Object.entries(files)) writeFileSync(join(cwd, name), text)
  const script = join(scratch, 'script.json')
  writeFileSync(script, JSON.stringify({ steps }))
  const home = join(scratch, 'home')
  const out = spawnSync(
    process.execPath,
    [join(root, 'bin/keel.js'), '-p', 'go', '--model', `scripted/${script}`, '--mode', 'yolo'],
    {
      cwd,
      env: { ...process.env, KEEL_HOME: home, KEEL_MODE: '' },
      encoding: 'utf8',
    },
  )
  expect(out.status, out.stderr).toBe(0)
  const sessions = join(home, 'sessions')
  const results: string[] = []
  for (const folder of readdirSync(sessions))
    for (const file of readdirSync(join(sessions, folder)).filter((name) => name.endsWith('.jsonl')))
      for (const line of readFileSync(join(sessions, folder, file), 'utf8')
        .trim()
        .split('\n')
        .slice(1)) {
        const event = JSON.parse(line)
        if (event.type === 'tool/result')
          results.push(event.data.content.map((block: { text?: string }) => block.text).join(''))
      }
  return { cwd, results }
}

test('edit near misses are named, todo_write in Claude shape is fixed in one retry', () => {
  const quotes = 'msg = “bye”  \nx = 1\n'
  const claude = Array.from({ length: 10 }, (_, i) => ({
    content: `step ${i}`,
    status: 'pending',
    activeForm: 'doing',
  }))
  const { cwd, results } = run(
    [
      {
        toolCalls: [{ name: 'edit', arguments: { path: 'q.py', old_string: 'msg = "bye"', new_string: 'msg = "hi"' } }],
      },
      { toolCalls: [{ name: 'edit', arguments: { path: 'q.py', old_string: 'msg = “bye”\nx = 1', new_string: 'x' } }] },
      { toolCalls: [{ name: 'todo_write', arguments: { todos: claude } }] },
      {
        toolCalls: [
          { name: 'todo_write', arguments: { todos: claude.map(({ content, status }) => ({ content, status })) } },
        ],
      },
      { text: 'done' },
    ],
    { 'q.py': quotes },
  )
  expect(results[0]).toContain('It nearly matches at line 1, differing only by typographic quotes')
  expect(results[1]).toContain('differing only by trailing whitespace: line 1 of the file is "msg = “bye”  "')
  expect(readFileSync(join(cwd, 'q.py'), 'utf8')).toBe(quotes)
  expect(results[2]).toContain('todos[0..9].activeForm: is not an allowed property (10 items)')
  expect(results[2]).toContain('Expected exactly {"todos":[{"content":"…","status":"pending|in_progress|completed"}]}')
  expect(results[3]).toBe('Todo list updated: 0 completed, 0 in progress, 10 pending.')
})
