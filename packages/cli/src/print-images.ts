// `keel -p --image shot.png`: the files read and checked before anything boots or is sent, so a bad one is one
// line and exit 2 (@keel/door/image-file, as the TUI reads an attached path).
import { readImageFile } from '@keel/door/image-file'
import type { ImageBlock } from '@keel/session/messages'
import { UsageError } from './args.ts'

export function readImages(paths: readonly string[], cwd: string): ImageBlock[] {
  return paths.map((path) => {
    const block = readImageFile(path, cwd)
    if ('error' in block) throw new UsageError(`--image ${block.error}`)
    return block
  })
}
