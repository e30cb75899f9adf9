// Which .gitignore files apply to a walk, read with the care of any file a tool reads, and what they decide.
import { stat } from 'node:fs/promises'
import { dirname, join, relative, sep } from 'node:path'
import { openRegular, readAll } from './open.ts'
import { isInside, type Scope } from './paths.ts'
import { type GitignoreRule, parseGitignore } from './wildmatch.ts'

interface Layer {
  /** The directory holding the .gitignore; its rules apply to paths below it. */
  base: string
  /** For a .gitignore at or above the walk root: the root relative to `base` (`''` at the root itself). */
  up?: string
  /** For one below the root: `base` relative to the root. */
  down?: string
  rules: GitignoreRule[]
  ripgrepReadsAlike: boolean
}

const toPosix = (path: string) => (sep === '/' ? path : path.split(sep).join('/'))
const joined = (a: string, b: string) => (a && b ? `${a}/${b}` : a || b)

/** A rule that may match an entry of one directory, with that directory's path below the rule's .gitignore. */
interface Check {
  rule: GitignoreRule
  /** The directory below the .gitignore's, with a trailing `/`, or `''`. */
  prefix: string
}

/** The last rule of the deepest .gitignore that matches decides, as in git (dir.c, last_matching_pattern). */
function decide(checks: Check[], name: string): boolean {
  for (const { rule, prefix } of checks) {
    if (rule.nameEnd && (rule.nameIsEnd ? name !== rule.nameEnd : !name.endsWith(rule.nameEnd))) continue
    if (rule.test(rule.basename ? name : prefix + name)) return !rule.negative
  }
  return false
}

/**
 * What the .gitignore files say about the entries of one directory whose parents are not ignored: only the rules
 * that can match there are kept (a basename rule anywhere; a path rule only where its literal start fits), so a
 * directory no rule reaches costs nothing per entry.
 */
export class DirectoryRules {
  constructor(
    private readonly files: Check[],
    private readonly dirs: Check[],
    /** Whether ripgrep reads every .gitignore that applies here as git does (see parseGitignore). */
    readonly ripgrepReadsAlike: boolean,
  ) {}

  /** Whether the entry `name` of this directory is ignored. */
  ignores(name: string, isDir: boolean): boolean {
    const checks = isDir ? this.dirs : this.files
    return checks.length > 0 && decide(checks, name)
  }
}

/**
 * The .gitignore files that apply under a walk root, evaluated the way git does: each directory is checked on the
 * way down (an ignored directory hides everything in it, and its own .gitignore is never consulted), and for one
 * path the last matching rule of the deepest .gitignore with one decides, so a deeper file can re-include what a
 * shallower one ignores, a directory (`gen/` above, `!gen/` below) included.
 */
export class GitignoreRules {
  /** Shallowest first. */
  private layers: Layer[] = []
  private readonly here = new Map<string, DirectoryRules>()
  private readonly dirs = new Map<string, boolean>()
  /** Whether the rules from above the root were dropped (see dropAncestors). */
  ancestorsDropped = false

  constructor(readonly root: string) {}

  add(base: string, text: string): void {
    const layer: Layer = { base, ...parseGitignore(text) }
    if (base !== this.root && isInside(this.root, base)) layer.down = toPosix(relative(this.root, base))
    else if (isInside(base, this.root)) layer.up = toPosix(relative(base, this.root))
    else return
    this.layers.push(layer)
    this.layers.sort((a, b) => a.base.length - b.base.length)
    this.here.clear()
    this.dirs.clear()
  }

  /** Drops the rules from above the walk root; used when they ignore the root itself, which was asked for by name. */
  dropAncestors(): void {
    this.layers = this.layers.filter((layer) => isInside(this.root, layer.base))
    this.ancestorsDropped = true
    this.here.clear()
    this.dirs.clear()
  }

  /** Whether the walk root, or a directory above it below the shallowest .gitignore, is ignored by the rules above. */
  rootIgnored(): boolean {
    const above = this.layers.filter((layer) => layer.up !== undefined && layer.base !== this.root)
    if (!above.length) return false
    const parts = above[0]!.up!.split('/')
    // Each directory from the top down, judged by the .gitignore files above it.
    for (let depth = parts.length - 1; depth >= 0; depth--) {
      const checks: Check[] = []
      for (const layer of [...above].reverse()) {
        const up = layer.up!.split('/')
        if (up.length <= depth) continue
        const inLayer = up.slice(0, up.length - depth)
        const prefix = inLayer.slice(0, -1).join('/')
        for (const rule of [...layer.rules].reverse()) checks.push({ rule, prefix: prefix ? `${prefix}/` : '' })
      }
      if (decide(checks, parts[parts.length - 1 - depth]!)) return true
    }
    return false
  }

  /** The rules for the entries of `dir` (relative to the root, `/`-separated, `''` for the root). */
  in(dir: string): DirectoryRules {
    let found = this.here.get(dir)
    if (found) return found
    const files: Check[] = []
    const dirs: Check[] = []
    let alike = true
    for (let i = this.layers.length - 1; i >= 0; i--) {
      const layer = this.layers[i]!
      let inLayer: string
      if (layer.up !== undefined) inLayer = joined(layer.up, dir)
      else if (dir === layer.down) inLayer = ''
      else if (dir.startsWith(`${layer.down}/`)) inLayer = dir.slice(layer.down!.length + 1)
      else continue
      const prefix = inLayer ? `${inLayer}/` : ''
      alike &&= layer.ripgrepReadsAlike
      for (let r = layer.rules.length - 1; r >= 0; r--) {
        const rule = layer.rules[r]!
        if (!rule.basename && !fits(rule.literal, prefix)) continue
        const check = { rule, prefix }
        dirs.push(check)
        if (!rule.dirOnly) files.push(check)
      }
    }
    found = new DirectoryRules(merged(files), merged(dirs), alike)
    this.here.set(dir, found)
    return found
  }

  /** `rel` is relative to the walk root, `/`-separated; ignored itself or by a directory it lies in. */
  ignores(rel: string, isDir: boolean): boolean {
    // No .gitignore applies (a tree without one): nothing to decide for each of its files.
    if (!this.layers.length) return false
    const slash = rel.lastIndexOf('/')
    const dir = slash > 0 ? rel.slice(0, slash) : ''
    if (dir && this.dirIgnored(dir)) return true
    return this.in(dir).ignores(rel.slice(slash + 1), isDir)
  }

  private dirIgnored(rel: string): boolean {
    const cached = this.dirs.get(rel)
    if (cached !== undefined) return cached
    const slash = rel.lastIndexOf('/')
    const parent = slash > 0 ? rel.slice(0, slash) : ''
    const ignored = (parent !== '' && this.dirIgnored(parent)) || this.in(parent).ignores(rel.slice(slash + 1), true)
    this.dirs.set(rel, ignored)
    return ignored
  }
}

/**
 * `checks` with each run of plain-name rules of one sign (`logs`, `coverage`, `.env`, … in a long .gitignore) made
 * one lookup: within a run the first to match decides, and all of them decide alike.
 */
function merged(checks: Check[]): Check[] {
  const out: Check[] = []
  for (let i = 0; i < checks.length; ) {
    const { rule } = checks[i]!
    let end = i + 1
    if (rule.basename && rule.exact)
      while (end < checks.length && checks[end]!.rule.basename && checks[end]!.rule.exact) {
        if (checks[end]!.rule.negative !== rule.negative) break
        end++
      }
    if (end - i < 3) {
      out.push(...checks.slice(i, end))
    } else {
      const names = new Set(checks.slice(i, end).map((check) => check.rule.literal))
      out.push({ rule: { ...rule, nameEnd: '', test: (name) => names.has(name) }, prefix: '' })
    }
    i = end
  }
  return out
}

/**
 * Whether a path rule whose text starts with `literal` could match an entry of the directory at `prefix` (both
 * below the rule's .gitignore): the entry's path is `prefix` and a name without a slash.
 */
function fits(literal: string, prefix: string): boolean {
  if (literal.length <= prefix.length) return prefix.startsWith(literal)
  return literal.startsWith(prefix) && !literal.includes('/', prefix.length)
}

const exists = (path: string) =>
  stat(path).then(
    () => true,
    () => false,
  )

/** Larger .gitignore files are not read. */
export const MAX_GITIGNORE_BYTES = 1024 * 1024

/**
 * A .gitignore comes from the repository, so it gets the same care as any file a tool reads: a regular file only (a
 * FIFO would block, /dev/zero would never end), not through a symlink (git does not follow one either), inside the
 * cwd when the walk is (the ones above the cwd, up to the repository top, are read on purpose), and at most 1 MB.
 */
export function readText(path: string, scope: Scope): Promise<string | undefined> {
  return openRegular(path, path, scope, 'read')
    .then(async ({ handle }) => {
      try {
        return (await readAll(handle, MAX_GITIGNORE_BYTES, () => new Error('too large'))).toString('utf8')
      } finally {
        await handle.close()
      }
    })
    .catch(() => undefined)
}

/** The directories above `root` whose .gitignore applies: up to the repository top, or to the cwd outside a repo. */
export async function ancestorDirs(root: string, cwd: string): Promise<string[]> {
  const dirs: string[] = []
  if (await exists(join(root, '.git'))) return dirs
  for (let dir = dirname(root); ; dir = dirname(dir)) {
    dirs.push(dir)
    if (await exists(join(dir, '.git'))) return dirs
    if (dirname(dir) === dir) break
  }
  // No repository above: only the cwd's own tree counts.
  return isInside(cwd, root) ? dirs.filter((dir) => isInside(cwd, dir)) : []
}

/** The rules from above `root` (dropped when they ignore the root itself) and the root's own .gitignore. */
export async function loadRules(root: string, cwd: string, scope: Scope): Promise<GitignoreRules> {
  const rules = new GitignoreRules(root)
  for (const dir of await ancestorDirs(root, cwd)) {
    const text = await readText(join(dir, '.gitignore'), { realCwd: cwd, confined: false })
    if (text !== undefined) rules.add(dir, text)
  }
  if (rules.rootIgnored()) rules.dropAncestors()
  const own = await readText(join(root, '.gitignore'), scope)
  if (own !== undefined) rules.add(root, own)
  return rules
}
