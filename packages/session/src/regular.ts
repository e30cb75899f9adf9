// Only regular files of the current user are sessions. KEEL_HOME is a directory other programs (and people) can put
// things in: a FIFO named like a session would hang a reader, a symlink to /dev/zero would fill memory, a symlink to
// another file would be appended to. Everything that opens a session file goes through here.
import { closeSync, constants, fstatSync, lstatSync, mkdirSync, openSync, statSync, type Stats } from 'node:fs'
import { dirname } from 'node:path'

export class SessionFileError extends Error {
  /** `line` 0: the problem is the file itself, not one of its lines. */
  constructor(
    readonly path: string,
    readonly line: number,
    readonly problem: string,
  ) {
    super(line ? `${path}:${line}: ${problem}` : `${path}: ${problem}`)
    this.name = 'SessionFileError'
  }
}

/**
 * The largest log loaded whole: V8 cannot hold a longer string (about 512 MiB), so a bigger file could only fail
 * half-way through a load, after the memory was spent.
 */
export const MAX_SESSION_BYTES = 0x1fffffe8

function kind(stats: Stats): string {
  if (stats.isSymbolicLink()) return 'a symbolic link'
  if (stats.isDirectory()) return 'a directory'
  if (stats.isFIFO()) return 'a FIFO'
  if (stats.isSocket()) return 'a socket'
  if (stats.isCharacterDevice()) return 'a character device'
  if (stats.isBlockDevice()) return 'a block device'
  return 'not a regular file'
}

/** Why these stats are not a session file, or undefined when they are one. */
export function notSessionFile(stats: Stats): string | undefined {
  if (!stats.isFile()) return `is ${kind(stats)}, not a session file; skipped`
  const uid = process.getuid?.()
  if (uid !== undefined && stats.uid !== uid)
    return `belongs to another user (uid ${stats.uid}), not to you (uid ${uid}); skipped`
  return undefined
}

/** lstat: why the entry at `path` is not a session file (it is never followed), or undefined. Missing files throw. */
export function checkSessionEntry(path: string): string | undefined {
  return notSessionFile(lstatSync(path))
}

/** A readable one-line cause for a failed file operation: `EACCES (permission denied)`. */
export function errnoText(error: unknown): string {
  const { code, message } = error as NodeJS.ErrnoException
  if (!code) return String((error as Error)?.message ?? error)
  const detail = message?.match(/^[A-Z]+: ([^,]+)/)?.[1]
  return detail ? `${code} (${detail})` : code
}

/**
 * Opens a session file without following a symlink or blocking on a FIFO, then checks what it opened (the check and
 * the open cannot be raced apart). Throws a one-line SessionFileError naming the file and the problem. A file too
 * large to load whole is refused unless `anySize` (backscan reads only its end).
 */
export function openSessionFile(
  path: string,
  mode: 'read' | 'write',
  options: { anySize?: boolean } = {},
): { fd: number; stats: Stats } {
  const flags = (mode === 'read' ? constants.O_RDONLY : constants.O_RDWR) | constants.O_NOFOLLOW | constants.O_NONBLOCK
  let fd: number
  try {
    fd = openSync(path, flags)
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code
    if (code === 'ELOOP') throw new SessionFileError(path, 0, 'is a symbolic link, not a session file')
    if (code === 'ENXIO') throw new SessionFileError(path, 0, 'is a socket or device, not a session file')
    throw new SessionFileError(
      path,
      0,
      `cannot open it for ${mode === 'read' ? 'reading' : 'writing'}: ${errnoText(error)}`,
    )
  }
  try {
    const stats = fstatSync(fd)
    const problem = notSessionFile(stats)
    if (problem) throw new SessionFileError(path, 0, problem.replace(/; skipped$/, ''))
    if (!options.anySize && stats.size > MAX_SESSION_BYTES) {
      throw new SessionFileError(
        path,
        0,
        `is ${stats.size} bytes, more than the ${MAX_SESSION_BYTES} a session log may hold to be loaded`,
      )
    }
    return { fd, stats }
  } catch (error) {
    closeSync(fd)
    throw error
  }
}

/**
 * mkdir -p that reports the real cause: Node's recursive mkdir says ENOENT when a parent cannot be created on a
 * read-only filesystem (EROFS) or without permission (EACCES). Folders it creates are private (0700): KEEL_HOME
 * holds transcripts and copies of the person's files.
 */
export function ensureDirectory(dir: string): void {
  try {
    mkdirSync(dir, 0o700)
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code
    if (code === 'EEXIST') {
      if (!statSync(dir).isDirectory())
        throw new SessionFileError(dir, 0, 'is not a directory; cannot keep sessions in it')
      return
    }
    const parent = dirname(dir)
    if (code !== 'ENOENT' || parent === dir)
      throw new SessionFileError(dir, 0, `cannot create this folder: ${errnoText(error)}`)
    ensureDirectory(parent)
    try {
      mkdirSync(dir, 0o700)
    } catch (again) {
      if ((again as NodeJS.ErrnoException).code !== 'EEXIST')
        throw new SessionFileError(dir, 0, `cannot create this folder: ${errnoText(again)}`)
    }
  }
}
