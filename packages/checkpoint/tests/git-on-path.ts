// A `git` first on PATH for the length of `run`: the shell `cases` (a `case " $* " in … esac` body, `$real` the real
// git) decide what some commands do; every other command runs the real git.
import { execFileSync } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

export async function withGitFirstOnPath<T>(cases: (real: string) => string, run: () => Promise<T>): Promise<T> {
  const bin = mkdtempSync(join(tmpdir(), 'keel-git-on-path-'))
  const real = execFileSync('sh', ['-c', 'command -v git'], { encoding: 'utf8' }).trim()
  writeFileSync(join(bin, 'git'), `#!/bin/sh\ncase " $* " in\n${cases(real)}\nesac\nexec '${real}' "$@"\n`, {
    mode: 0o755,
  })
  const path = process.env.PATH
  process.env.PATH = `${bin}:${path}`
  try {
    return await run()
  } finally {
    process.env.PATH = path
    rmSync(bin, { recursive: true, force: true })
  }
}
