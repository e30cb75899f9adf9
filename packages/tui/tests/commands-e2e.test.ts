// Command files and skills in the real TUI (tmux), with the scripted model: the `/` completion and `/help` list a
// copied `.claude/commands` file, running it sends its expansion (named on the log), `/skills` lists the skills.
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, expect, test } from 'vitest'
import { IN_CI, skipWithout } from '../../../test-support/system-tools.ts'
import { HAS_TMUX, Tmux, until } from './tmux.ts'

const REPO = fileURLToPath(new URL('../../../', import.meta.url))
const skip = skipWithout('tmux', HAS_TMUX, 'the command files terminal test')

let cleanup: (() => void) | undefined
afterAll(() => cleanup?.())

test.skipIf(skip)(
  'keel in tmux: command files in / completion and /help, run with their expansion; /skills lists skills',
  async () => {
    if (!HAS_TMUX && IN_CI) throw new Error('tmux is not installed; under CI=true this test needs it')
    const tmux = new Tmux()
    const home = mkdtempSync(join(tmpdir(), 'keel-cmd-home-'))
    const cwd = mkdtempSync(join(tmpdir(), 'keel-cmd-cwd-'))
    cleanup = () => {
      tmux.dispose()
      rmSync(home, { recursive: true, force: true })
      rmSync(cwd, { recursive: true, force: true })
    }
    mkdirSync(join(cwd, '.claude/commands/frontend'), { recursive: true })
    writeFileSync(
      join(cwd, '.claude/commands/frontend/review.md'),
      '---\ndescription: Review a component carefully\nargument-hint: [file]\n---\nReview the component in $1 for accessibility.\n',
    )
    mkdirSync(join(home, 'skills/release-notes'), { recursive: true })
    writeFileSync(
      join(home, 'skills/release-notes/SKILL.md'),
      '---\nname: release-notes\ndescription: Write release notes from the git log\n---\nRun git log.\n',
    )
    const script = join(home, 'script.json')
    writeFileSync(script, JSON.stringify({ steps: [{ text: 'Reviewed the button.' }] }))
    const screen = () => tmux.screen('one')
    tmux.start(
      'one',
      `cd '${cwd}' && env KEEL_HOME='${home}' KEEL_DEV=1 node '${join(REPO, 'bin/keel.js')}' --trust --model 'scripted/${script}'; echo "[keel exited $?]"; sleep 600`,
    )
    await until(() => screen().includes('─────'), 'the UI to start', 60_000, screen)

    tmux.type('one', '/front')
    await until(
      () => screen().includes('frontend:review') && screen().includes('Review a component carefully [file]'),
      'the completion to offer the command file',
      10_000,
      screen,
    )
    for (let i = 0; i < '/front'.length; i++) tmux.key('one', 'BSpace')
    await until(() => !screen().includes('frontend:review'), 'the completion to close', 10_000, screen)
    tmux.type('one', '/help')
    tmux.key('one', 'Enter')
    await until(() => screen().includes('/frontend:review'), '/help to list the command file', 10_000, screen)
    tmux.type('one', '/skills')
    tmux.key('one', 'Enter')
    await until(
      () => screen().includes('release-notes') && screen().includes('Write release notes from the git log'),
      '/skills to list the skill',
      10_000,
      screen,
    )
    tmux.type('one', '/frontend:review src/button.tsx')
    tmux.key('one', 'Enter')
    await until(() => screen().includes('Reviewed the button.'), 'the command to run', 20_000, screen)
    expect(screen()).toContain('Review the component in src/button.tsx for accessibility.')

    const dir = join(home, 'sessions')
    const folder = join(dir, readdirSync(dir)[0]!)
    const file = readdirSync(folder).find((f) => f.endsWith('.jsonl'))!
    const message = readFileSync(join(folder, file), 'utf8')
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line))
      .find((e) => e.type === 'user/message').data.message
    expect(message.command).toBe('frontend:review')
    expect(message.content[0].text).toBe('Review the component in src/button.tsx for accessibility.')
  },
  120_000,
)
