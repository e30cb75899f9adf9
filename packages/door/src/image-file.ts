// An image file the person named (`keel -p --image`, a TUI `@shot.png` or dragged path) as a prompt's image block.
// The file's first bytes and size decide before it is read whole, so a 50 MB file is refused without being read;
// what an image may be is @keel/session/image's rule.
import { closeSync, fstatSync, openSync, readFileSync, readSync } from 'node:fs'
import { basename, resolve } from 'node:path'
import { imageBlock, imageError } from '@keel/session/image'
import type { ImageBlock } from '@keel/session/messages'

/** `path` (relative to `cwd`) as an image block, or the one line that says why not (`shot.png: no such file`). */
export function readImageFile(path: string, cwd: string): ImageBlock | { error: string } {
  let fd: number
  try {
    fd = openSync(resolve(cwd, path), 'r')
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code
    const why = code === 'ENOENT' ? 'no such file' : code === 'EACCES' ? 'permission denied' : (error as Error).message
    return { error: `${path}: ${why}` }
  }
  try {
    const stat = fstatSync(fd)
    if (!stat.isFile()) return { error: `${path}: not a file` }
    const head = new Uint8Array(16)
    readSync(fd, head, 0, head.length, 0)
    const refused = imageError(path, head, stat.size)
    if (refused) return { error: refused }
    return imageBlock(basename(path), readFileSync(fd))
  } catch (error) {
    return { error: `${path}: ${(error as Error).message}` }
  } finally {
    closeSync(fd)
  }
}
