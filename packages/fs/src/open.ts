// Opening what was checked, not a path checked earlier. A path is resolved and checked first (paths.ts), but a
// symlink can be swapped in between that check and the open, so every open is verified on the descriptor itself:
// no symlink is followed at the last component, the opened file must be a regular file, and (on Linux) the path the
// kernel reports for the descriptor must lie inside the cwd. Writes go to a temp file in a directory reached one
// verified component at a time and are renamed over the target, so a link planted at the target is replaced, never
// written through.
import { randomBytes } from 'node:crypto'
import { constants, existsSync, realpathSync, type Stats } from 'node:fs'
import { lstat, mkdir, open, readlink, realpath, rename, unlink, type FileHandle } from 'node:fs/promises'
import { basename, dirname, join, relative, sep } from 'node:path'
import { mountPointsNow } from '@keel/sandbox/mount-points'
import { escapedError, isInside, PathError, type ResolvedPath, type Scope } from './paths.ts'

const { O_RDONLY, O_WRONLY, O_CREAT, O_EXCL, O_NOFOLLOW, O_NONBLOCK, O_NOCTTY, O_DIRECTORY } = constants

/** Linux names the file behind a descriptor here; `<dir fd>/name` also works as openat(2) does. */
const FD_DIR = '/proc/self/fd'
const byDescriptor = existsSync(FD_DIR)

/** What a non-regular file is, for an error that names it. */
export function kindOf(stats: Stats): string {
  if (stats.isDirectory()) return 'a directory'
  if (stats.isFIFO()) return 'a FIFO (named pipe)'
  if (stats.isSocket()) return 'a socket'
  if (stats.isCharacterDevice()) return 'a character device'
  if (stats.isBlockDevice()) return 'a block device'
  if (stats.isSymbolicLink()) return 'a symlink'
  return 'not a regular file'
}

function notRegular(display: string, stats: Stats, tool: string): Error {
  if (stats.isDirectory()) return new Error(`${display} is a directory${tool === 'read' ? '; use ls to list it' : ''}`)
  return new Error(
    `${display} is ${kindOf(stats)}; ${tool} only ${tool === 'write' ? 'writes' : 'reads'} regular files`,
  )
}

const codeOf = (error: unknown) => (error as NodeJS.ErrnoException).code

/** Where the descriptor really is, checked against the scope. */
async function verifyInside(handle: FileHandle, path: string, display: string, scope: Scope): Promise<void> {
  if (!scope.confined) return
  const where = byDescriptor ? await readlink(`${FD_DIR}/${handle.fd}`) : await realpath(path)
  if (!isInside(scope.realCwd, where)) throw escapedError(display, where, scope)
}

/** Whether `real` is one of the mount points this process's sandboxes keep (`@keel/sandbox/mount-points`). */
function isMountPoint(real: string): boolean {
  for (const point of mountPointsNow()) {
    if (point === real) return true
    try {
      if (realpathSync(point) === real) return true
    } catch {}
  }
  return false
}

export interface OpenedFile {
  handle: FileHandle
  stats: Stats
}

/**
 * Opens a regular file for reading. Anything else (directory, FIFO, socket, device) is refused by name before it is
 * opened (opening a FIFO could block and a device could have side effects), and again after, in case it changed.
 * O_NONBLOCK keeps even a FIFO swapped in at the last moment from blocking the open.
 */
export async function openRegular(real: string, display: string, scope: Scope, tool: string): Promise<OpenedFile> {
  const before = await lstat(real).catch((error) => {
    const code = codeOf(error)
    if (code === 'ENOENT' || code === 'ENOTDIR')
      throw new Error(`${display} does not exist${tool === 'edit' ? '; use write to create it' : ''}`)
    throw error
  })
  // The sandbox's empty stand-in for a missing protected file, while a sandbox lives (see files.ts): still missing.
  if (before.isFile() && before.size === 0 && isMountPoint(real))
    throw new Error(`${display} does not exist${tool === 'edit' ? '; use write to create it' : ''}`)
  // `real` has no symlinks left in it; one here means the path changed after it was checked.
  if (!before.isFile() && !before.isSymbolicLink()) throw notRegular(display, before, tool)
  let handle: FileHandle
  try {
    handle = await open(real, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY)
  } catch (error) {
    const code = codeOf(error)
    if (code === 'ELOOP') throw new PathError(`${display} was replaced by a symlink while being opened; try again`)
    if (code === 'ENOENT') throw new Error(`${display} does not exist`)
    if (code === 'ENXIO') throw new Error(`${display} is a socket; ${tool} only reads regular files`)
    throw error
  }
  try {
    const stats = await handle.stat()
    if (!stats.isFile()) throw notRegular(display, stats, tool)
    await verifyInside(handle, real, display, scope)
    return { handle, stats }
  } catch (error) {
    await handle.close()
    throw error
  }
}

/**
 * The whole file, refusing it past `max` bytes even if it grew after it was measured. The first read is sized from
 * `size` (the fstat the caller has) plus one byte, so a file that did not change is read in one call and its end
 * seen at once; the buffers are not zero-filled (every byte returned was read). A zeroed 1 MiB buffer per read made
 * grep spend most of its time in allocation and GC.
 */
export async function readAll(
  handle: FileHandle,
  max: number,
  tooLarge: () => Error,
  size = 64 * 1024 - 1,
): Promise<Buffer> {
  const chunks: Buffer[] = []
  let total = 0
  let want = Math.min(Math.max(size, 0) + 1, 1024 * 1024)
  for (;;) {
    const chunk = Buffer.allocUnsafe(Math.min(want, max + 1 - total))
    const { bytesRead } = await handle.read(chunk, 0, chunk.length, total)
    if (bytesRead === 0) break
    chunks.push(chunk.subarray(0, bytesRead))
    total += bytesRead
    if (total > max) throw tooLarge()
    // A regular file reads short only at its end.
    if (bytesRead < chunk.length) break
    want = Math.min(1024 * 1024, Math.max(want * 2, 64 * 1024))
  }
  return chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, total)
}

/** Opens `target.real` for reading and hands the verified descriptor to `use`, closing it afterwards. */
export async function withRegular<T>(
  target: ResolvedPath,
  tool: string,
  use: (file: OpenedFile) => Promise<T>,
): Promise<T> {
  const file = await openRegular(target.real, target.display, target, tool)
  try {
    return await use(file)
  } finally {
    await file.handle.close()
  }
}

/** The directory holding `real`, opened one component at a time below the cwd without following any symlink. */
async function openParent(target: ResolvedPath, create: boolean): Promise<{ dir: FileHandle; at: string }> {
  const root = target.confined ? target.realCwd : sep
  if (target.real === root) throw new Error(`${target.display} is a directory`)
  const parts = relative(root, dirname(target.real)).split(sep).filter(Boolean)
  let dir = await open(root, O_RDONLY | O_DIRECTORY)
  try {
    await verifyInside(dir, root, target.display, target)
    for (const part of parts) {
      const at = `${FD_DIR}/${dir.fd}/${part}`
      if (create)
        await mkdir(at).catch((error) => {
          if (codeOf(error) !== 'EEXIST') throw error
        })
      let next: FileHandle
      try {
        next = await open(at, O_RDONLY | O_DIRECTORY | O_NOFOLLOW)
      } catch (error) {
        const code = codeOf(error)
        if (code === 'ELOOP')
          throw new PathError(
            `${target.display}: a folder on its path was replaced by a symlink while writing; try again`,
          )
        if (code === 'ENOTDIR') throw new Error(`${target.display}: ${part} is not a directory`)
        if (code === 'ENOENT') throw new Error(`${target.display}: the folder ${part} does not exist`)
        throw error
      }
      await dir.close()
      dir = next
    }
    return { dir, at: `${FD_DIR}/${dir.fd}` }
  } catch (error) {
    await dir.close()
    throw error
  }
}

/** Without /proc/self/fd (not Linux): the same steps by path, checked by realpath (a narrower race remains). */
async function openParentByPath(target: ResolvedPath, create: boolean): Promise<{ dir: undefined; at: string }> {
  const parent = dirname(target.real)
  if (create) await mkdir(parent, { recursive: true })
  const where = await realpath(parent)
  if (target.confined && !isInside(target.realCwd, where)) throw escapedError(target.display, where, target)
  return { dir: undefined, at: parent }
}

export interface Replaced {
  /** Whether a file stood at the path before. */
  existed: boolean
}

/**
 * Writes `content` to a temp file beside the target and renames it into place. The file's mode is kept (`mode`,
 * else the mode of the regular file found there). Refuses a directory or special file at the target.
 */
export async function replaceFile(
  target: ResolvedPath,
  content: string | Buffer,
  options: { create: boolean; mode?: number; signal?: AbortSignal },
): Promise<Replaced> {
  const { dir, at } = byDescriptor
    ? await openParent(target, options.create)
    : await openParentByPath(target, options.create)
  const name = basename(target.real)
  const temp = `.${name.slice(0, 100)}.${randomBytes(6).toString('hex')}.keel-tmp`
  try {
    const existing = await lstat(join(at, name)).catch((error) => {
      if (codeOf(error) === 'ENOENT') return undefined
      throw error
    })
    // A symlink here was swapped in after the check: the rename below replaces the link itself.
    if (existing && !existing.isFile() && !existing.isSymbolicLink())
      throw notRegular(target.display, existing, 'write')
    const mode = options.mode ?? (existing?.isFile() ? existing.mode & 0o7777 : undefined)
    const file = await open(join(at, temp), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, mode ?? 0o666)
    try {
      try {
        await file.writeFile(content)
        // open() applied the umask; an existing file keeps exactly the mode it had.
        if (mode !== undefined) await file.chmod(mode)
      } finally {
        await file.close()
      }
      if (options.signal?.aborted) throw new Error('aborted before the file was replaced')
      await rename(join(at, temp), join(at, name))
    } catch (error) {
      await unlink(join(at, temp)).catch(() => undefined)
      throw error
    }
    return { existed: existing !== undefined }
  } finally {
    await dir?.close()
  }
}
