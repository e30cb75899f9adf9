// The folder both plan tmux tests run `keel` in: a fresh KEEL_HOME and project (a git root, so the plan's session is
// this folder's), a composition of the file tools, the plan and the permission policy, and a tmux server.
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { writeComposition } from '../../../test-support/composition.ts'
import { Tmux } from './tmux.ts'

export function planWorkspace(name: string): { tmux: Tmux; home: string; cwd: string; dispose: () => void } {
  const tmux = new Tmux(140, 50)
  const home = mkdtempSync(join(tmpdir(), `keel-${name}-home-`))
  const cwd = mkdtempSync(join(tmpdir(), `keel-${name}-cwd-`))
  writeComposition(join(cwd, 'keel.yml'), [
    "- { id: fs, name: '@keel/fs' }",
    "- { id: todo, name: '@keel/todo' }",
    "- { id: permissions, name: '@keel/permissions' }",
  ])
  mkdirSync(join(cwd, '.git'))
  const dispose = () => {
    tmux.dispose()
    rmSync(home, { recursive: true, force: true })
    rmSync(cwd, { recursive: true, force: true })
  }
  return { tmux, home, cwd, dispose }
}
