// The terminal asks once, before the UI starts, whether to trust a folder whose project files widen what Keel does:
// numbered choices confirmed with Enter (a stray key chooses nothing), a bare Enter stays untrusted.
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, expect, test } from 'vitest'
import { skipWithout } from '../../../test-support/system-tools.ts'
import { HAS_TMUX, Tmux, until } from './tmux.ts'

const skip = skipWithout('tmux', HAS_TMUX, 'the terminal trust test')
const REPO = fileURLToPath(new URL('../../../', import.meta.url))

let cleanup: (() => void) | undefined
afterAll(() => cleanup?.())

test.skipIf(skip)(
  'an untrusted folder: keel shows what its files ask for; Enter alone keeps it untrusted, 1 and Enter trusts it',
  async () => {
    const tmux = new Tmux(120, 40)
    const home = mkdtempSync(join(tmpdir(), 'keel-trust-home-'))
    const cwd = mkdtempSync(join(tmpdir(), 'keel-trust-cwd-'))
    cleanup = () => {
      tmux.dispose()
      rmSync(home, { recursive: true, force: true })
      rmSync(cwd, { recursive: true, force: true })
    }
    mkdirSync(join(cwd, '.git'))
    mkdirSync(join(cwd, '.keel'))
    writeFileSync(join(cwd, '.keel', 'settings.json'), JSON.stringify({ mode: 'yolo' }))
    const script = join(home, 'script.json')
    writeFileSync(script, JSON.stringify({ steps: [{ text: 'hello' }] }))
    const keel = `cd '${cwd}' && env KEEL_HOME='${home}' node '${join(REPO, 'bin/keel.js')}' --model 'scripted/${script}'; echo "[keel exited $?]"; sleep 600`
    const screen = (name: string) => () => tmux.screen(name)

    tmux.start('no', keel)
    await until(() => tmux.screen('no').includes('Type 1 or 2, then Enter'), 'the question', 60_000, screen('no'))
    expect(tmux.screen('no')).toContain('Its project files ask for: mode')
    expect(tmux.screen('no')).toContain('1. Trust this folder')
    // A single letter is no answer: nothing happens until Enter.
    tmux.type('no', 'y')
    await new Promise((done) => setTimeout(done, 300))
    expect(tmux.screen('no')).not.toContain('SCRIPTED MODEL')
    tmux.key('no', 'BSpace')
    tmux.key('no', 'Enter')
    await until(() => tmux.screen('no').includes('SCRIPTED MODEL'), 'the UI, untrusted', 60_000, screen('no'))
    expect(tmux.screen('no')).toContain('is not trusted: held back mode')
    expect(tmux.screen('no')).not.toContain('yolo mode')
    expect(existsSync(join(home, 'trust.json'))).toBe(false)
    tmux.key('no', 'C-c')
    tmux.key('no', 'C-c')

    tmux.start('yes', keel)
    await until(() => tmux.screen('yes').includes('Type 1 or 2, then Enter'), 'the question', 60_000, screen('yes'))
    tmux.type('yes', '1')
    tmux.key('yes', 'Enter')
    await until(() => tmux.screen('yes').includes('SCRIPTED MODEL'), 'the UI, trusted', 60_000, screen('yes'))
    expect(tmux.screen('yes')).toContain('yolo mode')
    expect(JSON.parse(readFileSync(join(home, 'trust.json'), 'utf8')).folders).toHaveProperty([cwd])
  },
  150_000,
)
