// `keel -p --image shot.png`: the files read and checked before anything boots or is sent, so a bad one is one
// line and exit 2. What an image may be is @keel/session/image's rule, as in every door.
import { closeSync, fstatSync, openSync, readFileSync, readSync } from 'node:fs'
import { basename, resolve } from 'node:path'
import { imageBlock, imageError } from '@keel/session/image'
import type { ImageBlock } from '@keel/session/messages'
import { UsageError } from './args.ts'

export function readImages(paths: readonly string[], cwd: string): ImageBlock[] {
  return paths.map((path) => {
    const block = readImage(path, resolve(cwd, path))
    if ('error' in block) throw new UsageError(`--image ${block.error}`)
    return block
  })
}

function readImage(path: string, file: string): ImageBlock | { error: string } {
  let fd: number
  try {
    fd = openSync(file, 'r')
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code
    return {
      error: `${path}: ${code === 'ENOENT' ? 'no such file' : code === 'EACCES' ? 'permission denied' : (error as Error).message}`,
    }
  }
  try {
    const stat = fstatSync(fd)
    if (!stat.isFile()) return { error: `${path}: not a file` }
    // The first bytes and the size decide: a 50 MB file is refused without being read.
    const head = new Uint8Array(16)
    readSync(fd, head, 0, head.length, 0)
    const refused = imageError(path, head, stat.size)
    if (refused) return { error: refused }
    return imageBlock(basename(path), readFileSync(fd))
  } finally {
    closeSync(fd)
  }
}
