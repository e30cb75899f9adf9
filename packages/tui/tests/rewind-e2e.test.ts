// `/rewind` in the real `keel` binary in tmux: two turns that change files (edit, a bash create and delete), a
// rewind refused while the person's own edit is in the way, a rewind of files and conversation that really puts the
// tree back and continues in a fork showing the earlier history and plan, and a files-only rewind from the fork.
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, expect, test } from 'vitest'
import { IN_CI, skipWithout } from '../../../test-support/system-tools.ts'
import { HAS_TMUX, Tmux, until } from './tmux.ts'
import { fileTree } from '../../../test-support/files.ts'
import { SETTLE_MS } from '../src/deliberate.ts'

/** The picker takes Enter only after a pause in typing (the Enter that sent /rewind picks nothing). */
const pause = () => new Promise((done) => setTimeout(done, SETTLE_MS + 100))

const REPO = fileURLToPath(new URL('../../../', import.meta.url))
const skip = skipWithout('tmux', HAS_TMUX, 'the /rewind terminal test')

/** The events of a session file (line 1, the header, first). */
function log(home: string, id: string): { type: string; [key: string]: unknown }[] {
  const dir = join(home, 'sessions', readdirSync(join(home, 'sessions'))[0]!)
  return readFileSync(join(dir, `${id}.jsonl`), 'utf8')
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line))
}

const plan = (status: string) => ({
  name: 'todo_write',
  arguments: { todos: [{ content: 'Change the files', status }] },
})

let cleanup: (() => void) | undefined
afterAll(() => cleanup?.())

test.skipIf(skip)(
  '/rewind: pick a prompt and what to restore, see the files and conflicts, and continue in the fork',
  async () => {
    if (!HAS_TMUX && IN_CI) throw new Error('tmux is not installed; under CI=true the /rewind terminal test needs it')
    const tmux = new Tmux(110, 50)
    const scratch = mkdtempSync(join(tmpdir(), 'keel-rewind-e2e-'))
    cleanup = () => {
      tmux.dispose()
      rmSync(scratch, { recursive: true, force: true })
    }
    const home = join(scratch, 'home')
    const cwd = join(scratch, 'project')
    const script = join(scratch, 'script.json')
    writeFileSync(
      script,
      JSON.stringify({
        steps: [
          {
            toolCalls: [
              plan('in_progress'),
              { name: 'edit', arguments: { path: 'a.txt', old_string: 'one', new_string: 'two' } },
            ],
          },
          { toolCalls: [{ name: 'bash', arguments: { command: 'echo new > made.txt && rm gone.txt' } }] },
          { toolCalls: [plan('completed')] },
          { text: 'Turn one done.' },
          {
            toolCalls: [
              { name: 'edit', arguments: { path: 'a.txt', old_string: 'two', new_string: 'three' } },
              { name: 'bash', arguments: { command: 'echo later > later.txt' } },
            ],
          },
          { text: 'Turn two done.' },
          { text: 'Answered from the fork.' },
        ],
      }),
    )
    mkdirSync(cwd)
    writeFileSync(join(cwd, 'a.txt'), 'one\n')
    writeFileSync(join(cwd, 'gone.txt'), 'delete me\n')
    const start = fileTree(cwd)

    tmux.start(
      'r',
      `cd '${cwd}' && env KEEL_HOME='${home}' KEEL_DEV=1 node '${join(REPO, 'bin/keel.js')}' --yolo --model 'scripted/${script}'; echo "[keel exited $?]"; sleep 600`,
    )
    const screen = () => tmux.screen('r')
    const has =
      (...parts: string[]) =>
      () => {
        const s = screen()
        return parts.every((part) => s.includes(part))
      }
    // A turn has ended when its text is on screen and the status line no longer offers to cancel it (the turn-end
    // snapshot may still be running after the text arrives; /rewind waits for nothing and says a turn is running).
    const ended =
      (...parts: string[]) =>
      () =>
        has(...parts)() && !screen().includes('esc to cancel')
    const send = (text: string) => {
      tmux.type('r', text)
      tmux.key('r', 'Enter')
    }
    await until(has('SCRIPTED MODEL', '─────'), 'the UI to start', 60_000, screen)

    send('first change')
    await until(ended('Turn one done.'), 'turn one', 30_000, screen)
    const afterOne = fileTree(cwd)
    expect(afterOne).toEqual({ 'a.txt': 'two\n', 'made.txt': 'new\n' })
    send('second change')
    await until(ended('Turn two done.'), 'turn two', 30_000, screen)
    expect(fileTree(cwd)).toMatchObject({ 'a.txt': 'three\n', 'later.txt': 'later\n' })

    // The person edits a file the rewind would restore: the picker lists it as a conflict and Cancel is under the cursor.
    writeFileSync(join(cwd, 'a.txt'), 'my own edit\n')
    send('/rewind')
    await until(has('Rewind', 'Turn 1', 'first change', 'Turn 2', 'second change'), 'the prompt picker', 10_000, screen)
    await pause()
    tmux.key('r', 'Enter') // Turn 2, the latest, is selected
    await until(has('Files and conversation', 'Files only', 'Conversation only'), 'the scope step', 10_000, screen)
    tmux.key('r', 'Enter')
    await until(
      has(
        'Files that change (2):',
        'restore  a.txt',
        'delete   later.txt',
        'Yours (changed since',
        'Overwrite my changes',
      ),
      'the conflict list',
      10_000,
      screen,
    )
    tmux.key('r', 'Enter') // Cancel
    await until(has('Conversation only'), 'back to the scope step', 10_000, screen)
    tmux.key('r', 'Escape')
    await until(has('pick the prompt'), 'back to the prompts', 10_000, screen)
    tmux.key('r', 'Escape')
    await until(() => !screen().includes('pick the prompt'), 'the picker to close', 10_000, screen)
    expect(fileTree(cwd)['a.txt']).toBe('my own edit\n')
    expect(fileTree(cwd)['later.txt']).toBe('later\n')

    // Without the conflict: back to the start of turn 2, files and conversation.
    writeFileSync(join(cwd, 'a.txt'), 'three\n')
    send('/rewind')
    await until(has('pick the prompt', 'Turn 2'), 'the prompt picker again', 10_000, screen)
    await pause()
    tmux.key('r', 'Enter')
    await until(has('Files and conversation'), 'the scope step', 10_000, screen)
    tmux.key('r', 'Enter')
    await until(has('Files that change (2):', 'continues in a new session'), 'the file list', 10_000, screen)
    expect(screen()).not.toContain('Yours (changed since')
    tmux.key('r', 'Enter') // Rewind
    await until(has('Continuing in session'), 'the fork to open', 15_000, screen)
    expect(fileTree(cwd)).toEqual(afterOne)
    const fork = /Continuing in session (\S+), forked from (\S+) before turn 2/.exec(screen().replace(/\n\s*/g, ' '))
    expect(fork, screen()).not.toBeNull()
    const [, forkId, originalId] = fork!
    // The fork shows turn 1 and the plan as it stood, not turn 2; the rewound prompt waits in the editor.
    const shown = tmux.screen('r', true)
    expect(shown).toContain('› first change')
    expect(shown).toContain('Turn one done.')
    expect(shown.slice(shown.lastIndexOf('Continuing in session'))).not.toContain('Turn two done.')
    expect(screen()).toContain('Plan 1/1')
    expect(screen()).toContain(`${forkId!.slice(0, 8)}`)
    expect(screen().split('\n')).toContain('second change')
    const forkLog = log(home, forkId!)
    expect(forkLog[0]).toMatchObject({ type: 'session', forkedFrom: { sessionId: originalId } })
    expect(forkLog.filter((e) => e.type === 'turn/start').length).toBe(1)
    expect(log(home, originalId!).some((e) => e.type === 'checkpoint/restore')).toBe(true)

    // The fork goes on by itself: the rewound prompt is sent again from the editor.
    tmux.key('r', 'Enter')
    await until(ended('Answered from the fork.'), 'a turn in the fork', 30_000, screen)
    expect(log(home, forkId!).filter((e) => e.type === 'turn/start').length).toBe(2)

    // Files only, from the fork, back to the start of turn 1: exactly the starting tree, and the fork stays open.
    send('/rewind')
    await until(has('pick the prompt', 'Turn 1'), 'the prompt picker in the fork', 10_000, screen)
    await pause()
    tmux.key('r', 'Up')
    tmux.key('r', 'Enter')
    await until(has('Files only'), 'the scope step', 10_000, screen)
    tmux.key('r', 'Down')
    tmux.key('r', 'Enter')
    await until(has('Files that change (3):', 'recreate gone.txt'), 'the file list', 10_000, screen)
    expect(screen()).not.toContain('continues in a new session')
    tmux.key('r', 'Enter')
    await until(has('Rewound the files to the start of turn 1'), 'the files rewound', 15_000, screen)
    expect(fileTree(cwd)).toEqual(start)
    expect(screen()).toContain(forkId!.slice(0, 8))

    send('/quit')
    await until(() => tmux.exitStatus('r') !== undefined, 'keel to exit', 10_000, screen)
    expect(tmux.exitStatus('r')).toBe(0)
  },
  180_000,
)
