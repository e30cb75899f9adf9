import { closeSync, constants, fstatSync, lstatSync, openSync, readdirSync, readSync, realpathSync } from 'node:fs'
import { isAbsolute, join, relative, sep } from 'node:path'

/** The largest command or skill file read; a bigger one is skipped with a warning rather than cut. */
export const FILE_LIMIT = 256 * 1024

function inside(root: string, path: string): boolean {
  const rel = relative(root, path)
  return rel === '' || (rel !== '..' && !rel.startsWith(`..${sep}`) && !isAbsolute(rel))
}

/**
 * Reads a file as the file tools do: its real path inside `root` (a link out of its folder is refused), a regular
 * file (a FIFO would block the read), at most `limit` bytes. Throws a one-line reason otherwise.
 */
export function readBounded(path: string, root: string, limit = FILE_LIMIT): string {
  let real: string
  try {
    real = realpathSync(path)
  } catch {
    throw new Error('a broken link')
  }
  if (!inside(realpathSync(root), real)) throw new Error('a link out of its folder')
  const fd = openSync(real, constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOFOLLOW)
  try {
    const stats = fstatSync(fd)
    if (!stats.isFile()) throw new Error('not a regular file')
    if (stats.size > limit) throw new Error(`${stats.size} bytes, more than the ${limit / 1024} KiB limit`)
    const buffer = Buffer.alloc(stats.size)
    let read = 0
    while (read < buffer.length) {
      const n = readSync(fd, buffer, read, buffer.length - read, read)
      if (!n) break
      read += n
    }
    return buffer.subarray(0, read).toString('utf8')
  } finally {
    closeSync(fd)
  }
}

/** Every `*.md` under `dir`, as paths relative to it, sorted; links to folders are not followed. */
export function markdownFiles(dir: string, limit = 1000): string[] {
  const found: string[] = []
  const walk = (rel: string) => {
    let entries
    try {
      entries = readdirSync(join(dir, rel), { withFileTypes: true })
    } catch {
      return
    }
    for (const entry of entries.sort((a, b) => (a.name < b.name ? -1 : 1))) {
      if (found.length >= limit) return
      const path = rel ? `${rel}/${entry.name}` : entry.name
      if (entry.isDirectory()) walk(path)
      else if (entry.name.endsWith('.md')) found.push(path)
    }
  }
  walk('')
  return found
}

/** Whether `path` exists as a folder (not through a link). */
export function isFolder(path: string): boolean {
  try {
    return lstatSync(path).isDirectory()
  } catch {
    return false
  }
}

/** The folders directly inside `dir` (not links), sorted. */
export function subfolders(dir: string, limit = 1000): string[] {
  try {
    return readdirSync(dir, { withFileTypes: true })
      .filter((entry) => entry.isDirectory())
      .map((entry) => entry.name)
      .sort()
      .slice(0, limit)
  } catch {
    return []
  }
}
