import { closeSync, constants, fstatSync, openSync, readSync, realpathSync } from 'node:fs'
import { isAbsolute, join, relative, sep } from 'node:path'
import { keelHome } from '@keel/session/paths'
import { projectDirs, projectRoot } from './root.ts'

/** Total bytes of instruction text that go into the system prompt. */
export const INSTRUCTIONS_LIMIT = 32 * 1024

export interface InstructionFile {
  /** Absolute path. */
  path: string
  /** How the system prompt heads it: relative to the working directory (the user's own file: absolute). */
  label: string
  /** Size of the file in bytes. */
  bytes: number
  /** Bytes of this file left out by the 32 KiB cap (0 when it went in whole). */
  cut: number
}

export interface Instructions {
  /** The text for the system prompt ('' when there are no files). */
  text: string
  files: InstructionFile[]
}

function inside(root: string, path: string): boolean {
  const rel = relative(root, path)
  return rel === '' || (rel !== '..' && !rel.startsWith(`..${sep}`) && !isAbsolute(rel))
}

/**
 * Opens an instruction file as the file tools open files: its real path must lie inside `root` (when given: a link
 * out of the repository is not read), it must be a regular file (a FIFO would block), and at most `limit` bytes are
 * read, whatever its size. `bytes` is the file's whole size.
 */
function readText(
  path: string,
  root: string | undefined,
  limit: number,
): { content: string; bytes: number } | undefined {
  let fd: number | undefined
  try {
    const real = realpathSync(path)
    if (root !== undefined && !inside(realpathSync(root), real)) return undefined
    fd = openSync(real, constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOFOLLOW)
    const stats = fstatSync(fd)
    if (!stats.isFile()) return undefined
    const buffer = Buffer.alloc(Math.min(stats.size, limit))
    let read = 0
    while (read < buffer.length) {
      const n = readSync(fd, buffer, read, buffer.length - read, read)
      if (!n) break
      read += n
    }
    const content = buffer.subarray(0, read).toString('utf8')
    // Cut at the read limit: a character split there is dropped rather than shown as U+FFFD.
    return { content: read < stats.size ? content.replace(/\uFFFD$/, '') : content, bytes: stats.size }
  } catch {
    return undefined
  } finally {
    if (fd !== undefined) closeSync(fd)
  }
}

/**
 * The user's `$KEEL_HOME/AGENTS.md`, then one file per folder from the project root down to `cwd`: its AGENTS.md,
 * else its CLAUDE.md. Read once; the caller keeps the result for the whole session so the prompt stays byte-identical.
 */
export function loadInstructions(cwd: string, limit = INSTRUCTIONS_LIMIT): Instructions {
  const found: { path: string; label: string; content: string; bytes: number }[] = []
  const userFile = join(keelHome(), 'AGENTS.md')
  // The person's own file may link anywhere; a project's must stay inside the project.
  const user = readText(userFile, undefined, limit)
  if (user !== undefined) found.push({ path: userFile, label: userFile, ...user })
  const root = projectRoot(cwd)
  for (const dir of projectDirs(cwd)) {
    for (const name of ['AGENTS.md', 'CLAUDE.md']) {
      const path = join(dir, name)
      if (path === userFile) continue
      const text = readText(path, root, limit)
      if (text === undefined) continue
      found.push({ path, label: relative(cwd, path) || name, ...text })
      break
    }
  }
  const parts: string[] = []
  const files: InstructionFile[] = []
  let budget = limit
  for (const file of found) {
    const bytes = file.bytes
    const kept = bytes <= budget ? file.content : clip(file.content, budget)
    const keptBytes = Buffer.byteLength(kept)
    // Once one file is cut, the later ones are left out whole rather than as a few stray bytes.
    budget = keptBytes < bytes ? 0 : budget - keptBytes
    files.push({ path: file.path, label: file.label, bytes, cut: bytes - keptBytes })
    if (keptBytes) parts.push(`## ${file.label}\n\n${kept.trimEnd()}`)
  }
  const cut = files.filter((file) => file.cut)
  if (cut.length) {
    parts.push(
      `[Instructions were capped at ${limit / 1024} KiB: ${cut.map((file) => `${file.bytes === file.cut ? 'left out' : 'cut'} ${file.cut} of ${file.bytes} bytes of ${file.label}`).join('; ')}.]`,
    )
  }
  const text = parts.length
    ? `# Project instructions\n\nFollow these instructions from the user and the project.\n\n${parts.join('\n\n')}`
    : ''
  return { text, files }
}

/** The longest prefix of `text` within `bytes` UTF-8 bytes, never splitting a character. */
function clip(text: string, bytes: number): string {
  if (bytes <= 0) return ''
  const clipped = Buffer.from(text).subarray(0, bytes).toString('utf8')
  return clipped.endsWith('\uFFFD') && !text.startsWith(clipped) ? clipped.slice(0, -1) : clipped
}
