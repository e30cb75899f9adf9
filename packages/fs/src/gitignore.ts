import { relative, sep } from 'node:path'
import ignore, { type Ignore } from 'ignore'
import { isInside } from './paths.ts'

interface Layer {
  /** The directory holding the .gitignore; its rules apply to paths below it. */
  base: string
  /** `base` with a trailing separator: the paths here are all normalized, so below it is a prefix test. */
  prefix: string
  rules: Ignore
  text: string
}

const toPosix = (path: string) => (sep === '/' ? path : path.split(sep).join('/'))

/**
 * The .gitignore files that apply under a walk root, evaluated the way git does: each directory is checked on the
 * way down (an ignored directory hides everything in it, and its own .gitignore is never consulted), and for one
 * path a deeper .gitignore overrides a shallower one.
 */
export class GitignoreRules {
  private layers: Layer[] = []
  private readonly dirs = new Map<string, boolean>()
  /** Whether the rules from above the root were dropped (see dropAncestors). */
  ancestorsDropped = false

  constructor(readonly root: string) {}

  add(base: string, text: string): void {
    this.layers.push({ base, prefix: base.endsWith(sep) ? base : base + sep, rules: ignore().add(text), text })
    this.layers.sort((a, b) => a.base.length - b.base.length)
    this.dirs.clear()
  }

  /** Drops the rules from above the walk root; used when they ignore the root itself, which was asked for by name. */
  dropAncestors(): void {
    this.layers = this.layers.filter((layer) => isInside(this.root, layer.base))
    this.ancestorsDropped = true
    this.dirs.clear()
  }

  private verdict(absolute: string, isDir: boolean): boolean {
    let ignored = false
    for (const layer of this.layers) {
      // Two path.relative calls per layer per file were most of a walk's time in a tree with a .gitignore.
      if (!absolute.startsWith(layer.prefix)) continue
      const result = layer.rules.test(toPosix(absolute.slice(layer.prefix.length)) + (isDir ? '/' : ''))
      if (result.ignored) ignored = true
      else if (result.unignored) ignored = false
    }
    return ignored
  }

  /** Whether the walk root itself is ignored by the rules above it. */
  rootIgnored(): boolean {
    return this.verdict(this.root, true)
  }

  /** `rel` is relative to the walk root, `/`-separated. */
  ignores(rel: string, isDir: boolean): boolean {
    // No .gitignore applies (a tree without one): nothing to decide for each of its files.
    if (!this.layers.length) return false
    const slash = rel.lastIndexOf('/')
    if (slash > 0 && this.dirIgnored(rel.slice(0, slash))) return true
    return isDir ? this.dirIgnored(rel) : this.verdict(this.absolute(rel), false)
  }

  private absolute(rel: string): string {
    return `${this.root}${sep}${sep === '/' ? rel : rel.split('/').join(sep)}`
  }

  private dirIgnored(rel: string): boolean {
    const cached = this.dirs.get(rel)
    if (cached !== undefined) return cached
    const slash = rel.lastIndexOf('/')
    const ignored = (slash > 0 && this.dirIgnored(rel.slice(0, slash))) || this.verdict(this.absolute(rel), true)
    this.dirs.set(rel, ignored)
    return ignored
  }

  /**
   * fast-glob ignore patterns for directories the loaded rules certainly exclude, so the walk does not descend into
   * `dist/` or `target/` only to filter everything out afterwards. Only plain names from files without negations
   * qualify; everything else is left to `ignores`.
   */
  pruneGlobs(): string[] {
    const globs: string[] = []
    for (const layer of this.layers) {
      const patterns = layer.text
        .split(/\r?\n/)
        .map((line) => line.trim())
        .filter((line) => line && !line.startsWith('#'))
      if (patterns.some((line) => line.startsWith('!'))) continue
      for (const pattern of patterns) {
        if (!/^\/?[\w.-]+(\/[\w.-]+)*\/?$/.test(pattern)) continue
        const name = pattern.replace(/^\/|\/$/g, '')
        if (name.split('/').some((part) => part === '.' || part === '..')) continue
        const anchored = pattern.startsWith('/') || name.includes('/')
        if (anchored) {
          const target = `${layer.base}${sep}${name.split('/').join(sep)}`
          if (target !== this.root && isInside(this.root, target))
            globs.push(`${toPosix(relative(this.root, target))}/**`)
        } else if (isInside(layer.base, this.root)) {
          globs.push(`**/${name}/**`)
        }
      }
    }
    return globs
  }
}
