// When ripgrep may apply the .gitignore files itself. Judging a 20,000-file listing against them from Node (the
// `ignore` library, path by path) cost more than ripgrep's whole walk, and a grep that walked beside its search was
// 2.5× a bare `rg`. ripgrep's own rules are git's (a deeper file overrides a shallower one, `!x` re-includes, an
// ignored directory is never opened) but for a few pattern forms (braces, POSIX classes, …: wildmatch.ts), so it
// decides, with .ignore/.rgignore, .git/info/exclude and the global excludes off as Keel's walk has them, wherever
// no .gitignore holds such a line. Nor can it be trusted with reading those files: it opens a FIFO named .gitignore
// and waits forever, follows a link to /dev/zero or outside the cwd, reads one of any size, and reads every
// .gitignore above the root up to `/`. So it runs only when none of those is there (checked before, above the root;
// scanned while it runs, below), and where it would apply rules Keel's walk does not (outside a repository, above
// the cwd); otherwise the caller walks the way files.ts does.
import { lstatSync } from 'node:fs'
import { lstat, stat } from 'node:fs/promises'
import { dirname, join } from 'node:path'
import { eachDirectory } from './files.ts'
import type { Scope } from './paths.ts'
import { ancestorDirs, loadRules, MAX_GITIGNORE_BYTES } from './gitignore.ts'

/** rg's flags for Keel's .gitignore semantics; `--hidden`, `--no-follow` and the .git/node_modules globs are ripgrep.ts's. */
const IGNORING = ['--no-require-git', '--no-ignore-dot', '--no-ignore-exclude', '--no-ignore-global']

/** What a .gitignore is, for ripgrep: absent, one it may read, or one only Keel's walk can take care of. */
async function gitignoreAt(dir: string): Promise<'none' | 'readable' | 'refused'> {
  const info = await lstat(join(dir, '.gitignore')).catch(() => undefined)
  if (!info) return 'none'
  return info.isFile() && info.size <= MAX_GITIGNORE_BYTES ? 'readable' : 'refused'
}

const hasGit = (dir: string) =>
  stat(join(dir, '.git')).then(
    () => true,
    () => false,
  )

/**
 * ripgrep's flags, or `undefined` when a .gitignore above the root is one it must not read or would apply
 * differently.
 */
async function plan(root: string, cwd: string, confined: boolean): Promise<string[] | undefined> {
  const above: string[] = []
  for (let dir = root; dirname(dir) !== dir; ) above.push((dir = dirname(dir)))
  const [kinds, gits] = await Promise.all([Promise.all(above.map(gitignoreAt)), Promise.all(above.map(hasGit))])
  if (kinds.includes('refused')) return undefined
  const rules = await loadRules(root, cwd, { realCwd: cwd, confined })
  const flags = [...IGNORING]
  if (rules.ancestorsDropped) flags.push('--no-ignore-parent')
  else {
    // ripgrep applies the ones up to the repository top (all of them outside one); Keel the same, but outside a
    // repository only those inside the cwd.
    const applied = new Set(await ancestorDirs(root, cwd))
    const top = gits.indexOf(true)
    const reached = (await hasGit(root)) ? 0 : top < 0 ? above.length : top + 1
    for (let i = 0; i < reached; i++) if (kinds[i] === 'readable' && !applied.has(above[i]!)) return undefined
  }
  return flags
}

/**
 * Whether no .gitignore below the root is one Keel would refuse to read (not a regular file, a symlink, over 1 MB)
 * or one ripgrep reads differently from git (wildmatch.ts), in the directories ripgrep enters: those the .gitignore
 * files let through, judged on the way down as files.ts judges them (eachDirectory), while ripgrep runs: spawning
 * `find` for it cost twice as much on a loaded machine. The root's visit covers the .gitignore files above it.
 */
function scan(root: string, scope: Scope, signal: AbortSignal): Promise<boolean> {
  return eachDirectory(root, scope, signal, (dir, entries, here) => {
    if (!here.ripgrepReadsAlike) return false
    const entry = entries.find((entry) => entry.name === '.gitignore')
    if (!entry) return true
    if (!entry.isFile()) return false
    const info = lstatSync(join(root, dir, '.gitignore'), { throwIfNoEntry: false })
    return info?.isFile() === true && info.size <= MAX_GITIGNORE_BYTES
  })
}

/**
 * Runs `work` (a ripgrep run given `flags`) with ripgrep applying the .gitignore files, or settles `undefined` when
 * it must not (see above): the run is then stopped and the caller walks instead. Rejects with the signal's reason.
 */
export async function withRipgrepIgnoring<T>(
  root: string,
  cwd: string,
  confined: boolean,
  signal: AbortSignal,
  work: (flags: string[], signal: AbortSignal) => Promise<T>,
): Promise<T | undefined> {
  const flags = await plan(root, cwd, confined)
  if (!flags) return undefined
  const stop = new AbortController()
  const onAbort = () => stop.abort(signal.reason)
  if (signal.aborted) throw signal.reason
  signal.addEventListener('abort', onAbort, { once: true })
  try {
    const working = work(flags, stop.signal)
    working.catch(() => undefined)
    const safe = await scan(root, { realCwd: cwd, confined }, stop.signal).catch(() => false)
    if (!safe) {
      if (signal.aborted) throw signal.reason
      stop.abort(new Error('a .gitignore ripgrep must not read'))
      return undefined
    }
    return await working
  } finally {
    signal.removeEventListener('abort', onAbort)
  }
}
