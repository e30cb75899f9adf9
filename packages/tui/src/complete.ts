import { realpathSync } from 'node:fs'
import {
  CombinedAutocompleteProvider,
  fuzzyFilter,
  type AutocompleteItem,
  type AutocompleteProvider,
  type AutocompleteSuggestions,
  type SlashCommand,
} from '@mariozechner/pi-tui'
import { walk } from '@keel/fs'
import { escapeLine } from './safe.ts'

/** How long one walk of the tree may take before a shallower one is used instead. */
const WALK_BUDGET_MS = 1500
/** The shallow fallback: a huge tree still offers its top levels. */
const SHALLOW_DEPTH = 3
/** A listing is reused while the person keeps typing after `@`; an older one is walked again. */
const FRESH_MS = 5000
/** Paths kept from one walk, and suggestions shown. */
const MAX_PATHS = 50_000
const MAX_SUGGESTIONS = 20

/** A path that would put a control character in the editor or the menu is not offered. */
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/

export interface PathListing {
  /** Relative to the cwd, `/`-separated; directories end with `/`. */
  paths: string[]
  /** False when the full walk ran out of time and this is the shallow one. */
  complete: boolean
}

/**
 * The cwd's paths for `@` completion, walked by @keel/fs's `walk` (the same .gitignore rules as `glob` and `grep`,
 * node_modules and .git skipped, symlinks not followed). The walk is asynchronous and bounded in time, so a huge tree
 * never holds the UI up: past the budget the listing falls back to the top levels. One walk serves a burst of keys.
 */
export class PathIndex {
  private listing: { at: number; value: Promise<PathListing> } | undefined
  private readonly realCwd: string

  constructor(
    readonly cwd: string,
    private readonly budgetMs = WALK_BUDGET_MS,
  ) {
    this.realCwd = (() => {
      try {
        return realpathSync(cwd)
      } catch {
        return cwd
      }
    })()
  }

  list(): Promise<PathListing> {
    const now = Date.now()
    if (!this.listing || now - this.listing.at > FRESH_MS) this.listing = { at: now, value: this.walkBounded() }
    return this.listing.value
  }

  private async walkBounded(): Promise<PathListing> {
    const full = await this.walkOnce(undefined)
    if (full) return { paths: full, complete: true }
    return { paths: (await this.walkOnce(SHALLOW_DEPTH)) ?? [], complete: false }
  }

  /** Undefined when the walk ran out of time (or failed). */
  private async walkOnce(deep: number | undefined): Promise<string[] | undefined> {
    try {
      const { entries } = await walk({
        root: this.realCwd,
        patterns: ['**'],
        cwd: this.realCwd,
        confined: true,
        onlyFiles: false,
        ...(deep ? { deep } : {}),
        signal: AbortSignal.timeout(this.budgetMs),
      })
      const paths: string[] = []
      for (const entry of entries) {
        if (CONTROL.test(entry.path)) continue
        paths.push(entry.kind === 'dir' ? `${entry.path}/` : entry.path)
        if (paths.length >= MAX_PATHS) break
      }
      return paths
    } catch {
      return undefined
    }
  }
}

/** The `@token` right before the cursor (a token starts the line or follows a space), or undefined. */
export function atToken(textBeforeCursor: string): string | undefined {
  const match = /(?:^|[ \t])(@[^\s]*)$/.exec(textBeforeCursor)
  return match?.[1]
}

/** Fuzzy candidates scored at most: scoring is the costly part, and only the best few are shown. */
const MAX_FUZZY_CANDIDATES = 400

/** Whether the characters of `query` appear in `text` in order (both lower case). */
function subsequence(query: string, text: string): boolean {
  let at = 0
  for (const char of query) {
    at = text.indexOf(char, at) + 1
    if (at === 0) return false
  }
  return true
}

function baseName(path: string): string {
  const trimmed = path.endsWith('/') ? path.slice(0, -1) : path
  return trimmed.slice(trimmed.lastIndexOf('/') + 1)
}

/**
 * Paths matching `query`, best first: the file name equal to the query (with or without its extension), then file
 * names starting with it, then containing it, then fuzzy matches over the whole path (the query's characters in
 * order). One linear pass with cheap string tests; only a bounded set of fuzzy candidates is scored, so a keystroke
 * stays cheap on a listing of tens of thousands of paths. An empty query lists the top level.
 */
export function matchPaths(paths: readonly string[], query: string, limit = MAX_SUGGESTIONS): string[] {
  if (!query) return paths.filter((path) => !path.slice(0, -1).includes('/')).slice(0, limit)
  const lower = query.toLowerCase()
  const folded = foldedOf(paths)
  // Name hits by rank (0 exact, 1 prefix, 2 substring), each bucket capped: a one-letter query matches everything.
  const buckets: string[][] = [[], [], []]
  const fuzzy: string[] = []
  for (let i = 0; i < paths.length; i++) {
    const { name, path } = folded[i]!
    const at = name.indexOf(lower)
    if (at >= 0) {
      const rank = name === lower || name.replace(/\.[^.]*$/, '') === lower ? 0 : at === 0 ? 1 : 2
      const bucket = buckets[rank]!
      if (bucket.length < MAX_FUZZY_CANDIDATES) bucket.push(paths[i]!)
    } else if (fuzzy.length < MAX_FUZZY_CANDIDATES && subsequence(lower, path)) {
      fuzzy.push(paths[i]!)
    }
  }
  const named: string[] = []
  for (const bucket of buckets) {
    if (named.length >= limit) break
    bucket.sort((a, b) => a.length - b.length || (a < b ? -1 : 1))
    named.push(...bucket.slice(0, limit - named.length))
  }
  if (named.length >= limit) return named
  return [...named, ...fuzzyFilter(fuzzy, query, (path) => path)].slice(0, limit)
}

/** Lower-cased paths and file names, computed once per listing (the listing is reused across keystrokes). */
const folded = new WeakMap<readonly string[], { name: string; path: string }[]>()
function foldedOf(paths: readonly string[]): { name: string; path: string }[] {
  let value = folded.get(paths)
  if (!value) {
    value = paths.map((path) => ({ name: baseName(path).toLowerCase(), path: path.toLowerCase() }))
    folded.set(paths, value)
  }
  return value
}

function atItem(path: string): AutocompleteItem {
  const isDir = path.endsWith('/')
  const trimmed = isDir ? path.slice(0, -1) : path
  const name = trimmed.slice(trimmed.lastIndexOf('/') + 1)
  return {
    value: path.includes(' ') ? `@"${path}"` : `@${path}`,
    label: escapeLine(name) + (isDir ? '/' : ''),
    description: escapeLine(path),
  }
}

/**
 * The editor's completion: `/` commands and Tab path completion from pi-tui's provider, `@` paths from a
 * `PathIndex`. It remembers which text its last answer was for, so the app can tell a menu that is still current
 * from one the person has typed past (see `isCurrent`).
 */
export class KeelAutocomplete implements AutocompleteProvider {
  private readonly base: CombinedAutocompleteProvider
  private answeredFor: string | undefined

  constructor(
    commands: SlashCommand[],
    readonly index: PathIndex,
  ) {
    this.base = new CombinedAutocompleteProvider(commands, index.cwd)
  }

  async getSuggestions(
    lines: string[],
    cursorLine: number,
    cursorCol: number,
    options: { signal: AbortSignal; force?: boolean },
  ): Promise<AutocompleteSuggestions | null> {
    const key = snapshot(lines, cursorLine, cursorCol)
    const token = atToken((lines[cursorLine] ?? '').slice(0, cursorCol))
    let answer: AutocompleteSuggestions | null
    if (token !== undefined) {
      const listing = await this.index.list()
      const query = token.startsWith('@"') ? token.slice(2) : token.slice(1)
      const items = matchPaths(listing.paths, query).map(atItem)
      answer = items.length ? { items, prefix: token } : null
    } else {
      answer = await this.base.getSuggestions(lines, cursorLine, cursorCol, options)
    }
    if (!options.signal.aborted) this.answeredFor = key
    return answer
  }

  applyCompletion(lines: string[], cursorLine: number, cursorCol: number, item: AutocompleteItem, prefix: string) {
    return this.base.applyCompletion(lines, cursorLine, cursorCol, item, prefix)
  }

  shouldTriggerFileCompletion(lines: string[], cursorLine: number, cursorCol: number): boolean {
    return this.base.shouldTriggerFileCompletion(lines, cursorLine, cursorCol)
  }

  /**
   * Whether the open menu was computed for exactly this text and cursor. pi-tui refreshes the menu asynchronously,
   * so keys that arrive in one burst (`plan` and Enter in one write) reach the editor while the menu still lists
   * the matches for `/`; Enter would then pick the stale selection instead of what was typed.
   */
  isCurrent(lines: readonly string[], cursor: { line: number; col: number }): boolean {
    return this.answeredFor === snapshot(lines, cursor.line, cursor.col)
  }
}

function snapshot(lines: readonly string[], line: number, col: number): string {
  return `${line}:${col}:${lines.join('\n')}`
}
