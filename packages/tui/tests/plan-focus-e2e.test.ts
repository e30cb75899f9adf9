// The plan panel under the keys: the real `keel` in tmux, the scripted model. Ctrl+P focuses the panel; an item is
// added in its one-line input, moved, marked done, another deleted, each a `todo/write` from the person; the model's
// next request carries the change note, read back from the log.
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, expect, test } from 'vitest'
import { skipWithout } from '../../../test-support/system-tools.ts'
import { HAS_TMUX, until } from './tmux.ts'
import { planWorkspace } from './plan-workspace.ts'
import { onlySessionEvents } from '../../../test-support/files.ts'

const skip = skipWithout('tmux', HAS_TMUX, 'the terminal plan-panel keys test')
const REPO = fileURLToPath(new URL('../../../', import.meta.url))

let cleanup: (() => void) | undefined
afterAll(() => cleanup?.())

test.skipIf(skip)(
  'keel in tmux: ctrl+p focuses the plan; add, move, done, delete are the person’s writes and reach the model',
  async () => {
    const { tmux, home, cwd, dispose } = planWorkspace('planfocus')
    cleanup = dispose
    const script = join(home, 'script.json')
    writeFileSync(
      script,
      JSON.stringify({
        steps: [
          {
            toolCalls: [
              {
                id: 't1',
                name: 'todo_write',
                arguments: {
                  todos: [
                    { content: 'Read the code', status: 'pending' },
                    { content: 'Fix the bug', status: 'pending' },
                  ],
                },
              },
            ],
          },
          { text: 'Planned.' },
          { text: 'Noted the change.' },
        ],
      }),
    )
    const keel = `cd '${cwd}' && env KEEL_HOME='${home}' KEEL_DEV=1 node '${join(REPO, 'bin/keel.js')}' --config keel.yml --model 'scripted/${script}'; echo "[keel exited $?]"; sleep 600`
    const screen = (history = false) => tmux.screen('focus', history)
    const has =
      (...parts: string[]) =>
      () =>
        parts.every((part) => screen().includes(part))
    const send = (text: string) => {
      tmux.type('focus', text)
      tmux.key('focus', 'Enter')
    }

    tmux.start('focus', keel)
    await until(has('SCRIPTED MODEL', '· ask mode ·'), 'the UI to start', 60_000, screen)
    send('plan the fix')
    await until(has('Planned.'), 'the model’s plan', 30_000, screen)

    tmux.key('focus', 'C-p')
    await until(has('a add', 'esc leave'), 'the focused panel', 10_000, screen)
    tmux.type('focus', 'a')
    await until(has('add: '), 'the one-line input', 10_000, screen)
    send('Write docs')
    await until(has('you changed the plan: added "Write docs"'), 'the add', 10_000, screen)
    // The cursor follows the new item (the last); K moves it up one.
    tmux.type('focus', 'K')
    await until(has('you changed the plan: reordered the items'), 'the move', 10_000, screen)
    tmux.type('focus', 'x')
    await until(has('you changed the plan: marked done "Write docs"'), 'the done', 10_000, screen)
    tmux.type('focus', 'k')
    tmux.type('focus', 'd')
    await until(has('you changed the plan: removed "Read the code"'), 'the delete', 10_000, screen)
    // The plans service's rules hold for the keys too: a repeated item is refused, the rule named.
    tmux.type('focus', 'a')
    await until(has('add: '), 'the one-line input again', 10_000, screen)
    send('Fix the bug')
    await until(has('repeats todos['), 'the duplicate refused', 10_000, screen)
    tmux.key('focus', 'Escape')
    await until(() => !screen().includes('esc leave'), 'the panel to let go', 10_000, screen)
    send('go on')
    await until(has('Noted the change.'), 'the next turn', 30_000, screen)

    const events = onlySessionEvents(home)
    const writes = events
      .filter((event) => event.type === 'todo/write')
      .map((event) => event.data as { source?: string; todos: unknown })
    // The model's plan, the four edits from the keys, then the next turn carrying the person's plan forward.
    expect(writes.map((write) => write.source ?? 'model')).toEqual(['model', 'user', 'user', 'user', 'user', 'user'])
    expect(writes[4]!.todos).toEqual([
      { content: 'Write docs', status: 'completed' },
      { content: 'Fix the bug', status: 'pending' },
    ])
    const notes = events
      .map((event) => event.data as { message?: { source?: string; content?: unknown } })
      .filter((data) => data.message?.source === 'plan')
      .map((data) => JSON.stringify(data.message!.content))
    expect(notes.at(-1)).toContain('The person changed the plan: added \\"Write docs\\", removed \\"Read the code\\"')
    expect(notes.at(-1)).toContain('1. [completed] Write docs\\n2. [pending] Fix the bug')
  },
  180_000,
)
