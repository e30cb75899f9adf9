// Plan mode in the terminal UI: the real `keel` in tmux, the scripted model. Shift+Tab into plan mode, a proposal,
// its text edited in $EDITOR (a script as the editor), approval in auto mode, then the person's edits with /plan and
// the change note the model's next request carries, read back from the log.
import { existsSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, expect, test } from 'vitest'
import { skipWithout } from '../../../test-support/system-tools.ts'
import { HAS_TMUX, until } from './tmux.ts'
import { planWorkspace } from './plan-workspace.ts'
import { onlySessionEvents } from '../../../test-support/files.ts'

const skip = skipWithout('tmux', HAS_TMUX, 'the terminal plan-mode test')
const REPO = fileURLToPath(new URL('../../../', import.meta.url))

let cleanup: (() => void) | undefined
afterAll(() => cleanup?.())

test.skipIf(skip)(
  'keel in tmux: shift+tab into plan mode, a proposal edited in $EDITOR and approved, /plan edits reach the model',
  async () => {
    const { tmux, home, cwd, dispose } = planWorkspace('plan')
    cleanup = dispose
    const script = join(home, 'script.json')
    writeFileSync(
      script,
      JSON.stringify({
        steps: [
          {
            toolCalls: [
              {
                id: 'p1',
                name: 'propose_plan',
                arguments: {
                  plan: 'Write a.txt',
                  todos: [
                    { content: 'Write a.txt', status: 'pending' },
                    { content: 'Check it', status: 'pending' },
                  ],
                },
              },
            ],
          },
          { text: 'Proposed.' },
          { toolCalls: [{ id: 'w1', name: 'write', arguments: { path: 'a.txt', content: 'x\n' } }] },
          { text: 'Wrote it.' },
          { text: 'Noted the change.' },
        ],
      }),
    )
    // The editor: appends a task to the checklist and rewords the plan's first line.
    const editor = join(home, 'edit.sh')
    writeFileSync(editor, `sed -i '1s/.*/Write a.txt with x/' "$1"\nprintf 'Tell the user\\n' >> "$1"\n`)
    const keel = `cd '${cwd}' && env KEEL_HOME='${home}' KEEL_DEV=1 EDITOR='sh ${editor}' node '${join(REPO, 'bin/keel.js')}' --config keel.yml --model 'scripted/${script}'; echo "[keel exited $?]"; sleep 600`
    const screen = (history = false) => tmux.screen('plan', history)
    const has =
      (...parts: string[]) =>
      () =>
        parts.every((part) => screen().includes(part))
    const send = (text: string) => {
      tmux.type('plan', text)
      tmux.key('plan', 'Enter')
    }

    tmux.start('plan', keel)
    await until(has('SCRIPTED MODEL', '· ask mode ·'), 'the UI to start', 60_000, screen)
    for (const mode of ['auto', 'read-only', 'plan']) {
      tmux.key('plan', 'BTab')
      await until(has(`· ${mode} mode ·`), `the footer to say ${mode}`, 10_000, screen)
    }
    send('add a.txt')
    await until(has('plan proposed: approve, edit or reject it', 'Proposed.'), 'the proposal', 30_000, screen)

    send('/plan edit')
    await until(has('Plan edited'), 'the edit from $EDITOR', 30_000, screen)
    send('/plan approve auto')
    await until(has('Wrote it.'), 'the approved turn', 30_000, screen)
    expect(readFileSync(join(cwd, 'a.txt'), 'utf8')).toBe('x\n')
    await until(has('· auto mode ·'), 'the footer to say auto', 10_000, screen)

    send('/plan add Write docs')
    await until(has('you changed the plan: added "Write docs"'), 'the add', 10_000, screen)
    send('/plan move 4 1')
    await until(has('you changed the plan: reordered the items'), 'the move', 10_000, screen)
    send('/plan add Check it')
    await until(has('repeats todos[2]'), 'the duplicate refused', 10_000, screen)
    send('go on')
    await until(has('Noted the change.'), 'the next turn', 30_000, screen)

    const events = onlySessionEvents(home)
    const approve = events.find((event) => event.type === 'plan/approve')!
    expect(approve.data).toMatchObject({
      mode: 'auto',
      plan: 'Write a.txt with x',
      todos: [
        { content: 'Write a.txt', status: 'pending' },
        { content: 'Check it', status: 'pending' },
        { content: 'Tell the user', status: 'pending' },
      ],
    })
    const notes = events
      .map((event) => event.data as { message?: { source?: string; content?: unknown } })
      .filter((data) => data.message?.source === 'plan')
      .map((data) => JSON.stringify(data.message!.content))
    // Moving the new task first keeps the model's own items in their order: the note names only what it added.
    expect(notes.at(-1)).toContain(
      'The person changed the plan: added \\"Write docs\\". Keep their items; the plan now:\\n1. [pending] Write docs\\n2. [pending] Write a.txt',
    )
    expect(existsSync(join(cwd, 'a.txt'))).toBe(true)
  },
  180_000,
)
