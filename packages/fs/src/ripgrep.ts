// grep through the system ripgrep: its parallel walker and searcher are 10–100× what a walk and a read per file from
// Node can do on a large tree. ripgrep lists and finds candidates and applies the .gitignore files, with git's
// rules, only where it meets none that Keel would refuse to read or that it reads differently from git
// (rg-ignore.ts); the glob is Keel's own (picomatch, as fast-glob matches) on its listing, and the worker in matcher.ts decides each candidate line with the JavaScript
// regex, so a catastrophic pattern still stops at the time limit. Where ripgrep is missing or cannot promise the same
// answer, the callers walk and read.
import { execFile, spawn } from 'node:child_process'
import { isAbsolute } from 'node:path'
import { StringDecoder } from 'node:string_decoder'

/** The ripgrep to run: a command found on PATH (`rg` by default), or none when the config says `''`. */
const located = new Map<string, Promise<string | undefined>>()
function locate(command: string): Promise<string | undefined> {
  if (!command || process.platform === 'win32') return Promise.resolve(undefined)
  let found = located.get(command)
  if (!found) {
    found = new Promise((done) =>
      execFile(command, ['--version'], { timeout: 5000 }, (error, stdout) =>
        done(!error && /^ripgrep \d/.test(String(stdout)) ? command : undefined),
      ),
    )
    located.set(command, found)
  }
  return found
}

/** ripgrep's command and the flags every run here takes: hidden files, no link followed, never .git or node_modules. */
interface Ripgrep {
  command: string
  args: string[]
}

/** The ripgrep to run, or `undefined` when `command` is `''` or finds none. */
export async function ripgrep(command: string): Promise<Ripgrep | undefined> {
  const found = await locate(command)
  if (!found) return undefined
  return {
    command: found,
    args: ['--no-config', '--no-messages', '--hidden', '--no-follow', '--glob=!.git', '--glob=!node_modules'],
  }
}

/** Runs ripgrep in `root` and hands each line of its output to `onLine`; rejects on the signal or a failure. */
export function runRipgrep(
  walk: Ripgrep,
  root: string,
  args: string[],
  separator: '\n' | '\0',
  signal: AbortSignal,
  onLine: (line: string) => void,
): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason)
    const child = spawn(walk.command, [...walk.args, ...args], {
      cwd: root,
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, RIPGREP_CONFIG_PATH: '' },
    })
    let stderr = ''
    child.stderr.setEncoding('utf8')
    child.stderr.on('data', (chunk: string) => {
      if (stderr.length < 4000) stderr += chunk
    })
    const stop = () => child.kill('SIGKILL')
    signal.addEventListener('abort', stop, { once: true })
    // Records end in `separator` (NUL for file names, which may hold a newline; JSON escapes its own).
    const decoder = new StringDecoder('utf8')
    let rest = ''
    child.stdout.on('data', (chunk: Buffer) => {
      const parts = (rest + decoder.write(chunk)).split(separator)
      rest = parts.pop()!
      for (const part of parts) onLine(part)
    })
    child.stdout.on('end', () => {
      rest += decoder.end()
      if (rest) onLine(rest)
      rest = ''
    })
    let failed: Error | undefined
    child.on('error', (error) => {
      failed = error
    })
    child.on('close', (code) => {
      signal.removeEventListener('abort', stop)
      if (signal.aborted) return reject(signal.reason)
      // 1: nothing matched. 2 and silent (--no-messages hides file errors): some file could not be read, which the
      // walk also passes over. 2 with a message is a pattern or a flag this ripgrep does not take (an older one).
      if (failed) return reject(failed)
      if (code === 0 || code === 1 || (code === 2 && !stderr.trim())) return resolve()
      reject(new RipgrepFailed(stderr.trim().split('\n')[0] || `ripgrep exited ${code}`))
    })
  })
}

/** ripgrep refused the arguments (a pattern its regex syntax does not take): the caller falls back. */
export class RipgrepFailed extends Error {}

const DOT_DOT = /(?:^|\/)\.\.(?:\/|$)/

/** A path as ripgrep prints it under `.`, relative to the root and `/`-separated. */
export function relativeOf(printed: string): string | undefined {
  const rel = printed.startsWith('./') ? printed.slice(2) : printed
  return rel && !isAbsolute(rel) && !DOT_DOT.test(rel) ? rel : undefined
}

/** The regular files under the root that `flags` let through (ripgrep lists no link, FIFO or device), relative. */
export async function ripgrepFiles(rg: Ripgrep, root: string, flags: string[], signal: AbortSignal): Promise<string[]> {
  const files: string[] = []
  await runRipgrep(rg, root, ['--files', '--null', ...flags, '.'], '\0', signal, (line) => {
    const rel = relativeOf(line)
    if (rel !== undefined) files.push(rel)
  })
  return files
}

/** Keel's glob semantics (fast-glob's: dotfiles match, a bare name matches at any depth on request) on listed paths. */
export async function globFilter(pattern: string, baseNameMatch: boolean): Promise<(rel: string) => boolean> {
  const { default: picomatch } = await import('picomatch')
  const glob = pattern.replace(/^(\.\/)+/, '')
  // picomatch's own matcher, without the two result objects it builds for every path of a large listing: the path
  // equal to the glob, or the glob's regex on it (on its last part for a bare name).
  const regex = picomatch.makeRe(glob, { dot: true })
  if (baseNameMatch && !glob.includes('/'))
    return (rel) => rel === glob || regex.test(rel.slice(rel.lastIndexOf('/') + 1))
  return (rel) => rel === glob || regex.test(rel)
}

/**
 * The JavaScript regex `source` (no flags but `i`) in ripgrep's syntax, finding every line the JavaScript regex
 * finds and maybe more (the worker then decides), or `undefined` when that cannot be promised: lookaround,
 * backreferences, named groups, class set operations and escapes whose meaning differs are left to the fallback.
 * Unicode-aware `\b`, `\B`, `\W` and `\D` would miss lines JavaScript's ASCII ones match, so they become ASCII.
 */
export function toRipgrepRegex(source: string): string | undefined {
  const hex = (code: number) => `\\x{${code.toString(16)}}`
  let out = ''
  let inClass = false
  for (let i = 0; i < source.length; i++) {
    const c = source[i]!
    if (c === '\\') {
      const n = source[++i]
      if (n === undefined) return undefined
      if ('bBWD'.includes(n)) {
        if (inClass) return undefined
        out += `(?-u:\\${n})`
      } else if ('dwsStnrfv'.includes(n)) out += `\\${n}`
      else if (/[\^$\\.*+?()[\]{}|/-]/.test(n)) out += hex(n.charCodeAt(0))
      else if (n === 'x' && /^[0-9a-fA-F]{2}$/.test(source.slice(i + 1, i + 3))) {
        out += hex(Number.parseInt(source.slice(i + 1, i + 3), 16))
        i += 2
      } else if (n === 'u' && /^[0-9a-fA-F]{4}$/.test(source.slice(i + 1, i + 5))) {
        const code = Number.parseInt(source.slice(i + 1, i + 5), 16)
        if (code >= 0xd800 && code <= 0xdfff) return undefined
        out += hex(code)
        i += 4
      } else return undefined
      continue
    }
    if (inClass) {
      if (c === ']') inClass = false
      else if (c === '[' || ((c === '&' || c === '-' || c === '~') && source[i + 1] === c)) return undefined
      out += c
      continue
    }
    if (c === '[') {
      inClass = true
      out += c
      if (source[i + 1] === '^') out += source[++i]
      // `[]` and `[^]` are JavaScript's empty and any-character classes; ripgrep reads a literal `]` there.
      if (source[i + 1] === ']') return undefined
    } else if (c === '(' && source[i + 1] === '?') {
      if (source[i + 2] !== ':') return undefined
      out += '(?:'
      i += 2
    } else if (c === '{') {
      const repeat = /^\{\d+(,\d*)?\}/.exec(source.slice(i))?.[0]
      if (!repeat) return undefined
      out += repeat
      i += repeat.length - 1
    } else if (c === '}') out += hex(0x7d)
    else out += c
  }
  return inClass ? undefined : out
}
