// Images in the editor: a typed `@shot.png` or a dragged (pasted) path to an image becomes `[image shot.png 120 KB]`
// once it is followed by a space, and the prompt carries the image itself. The file is read and checked by
// @keel/door/image-file (type by its bytes, size), the label is @keel/session/image's; a path that is not an image
// the model can take is one line in the status and stays as typed.
import { homedir } from 'node:os'
import { readImageFile } from '@keel/door/image-file'
import { imageBytes, imageLabel } from '@keel/session/image'
import type { ContentBlock, ImageBlock } from '@keel/session'

const IMAGE_NAME = /\.(png|jpe?g|gif|webp)$/i

/**
 * A path-like word: `@` and anything, or a path (absolute, `~/`, `./`, `../`) ending in an image extension, as a
 * terminal pastes a dragged file (quoted, or with `\ ` for spaces).
 */
const TOKEN = /(^|\s)(@?)('[^'\n]+'|"[^"\n]+"|(?:\\ |[^\s])+)(?=\s|$)/g

interface Found {
  start: number
  end: number
  path: string
}

function unquote(word: string): string {
  if ((word.startsWith("'") && word.endsWith("'")) || (word.startsWith('"') && word.endsWith('"')))
    return word.slice(1, -1)
  return word.replace(/\\ /g, ' ')
}

/** The image paths in `text`: completed ones only (a space after them) unless `all` (the prompt is being sent). */
function imagePaths(text: string, all: boolean): Found[] {
  const out: Found[] = []
  for (const match of text.matchAll(TOKEN)) {
    const [, lead, at, word] = match as unknown as [string, string, string, string]
    const start = match.index! + lead.length
    const end = start + at.length + word.length
    if (!all && end >= text.length) continue
    const path = unquote(word)
    const pathLike = /^(\/|~\/|\.\.?\/)/.test(path)
    if (!IMAGE_NAME.test(path) || (!at && !pathLike)) continue
    out.push({ start, end, path: path.startsWith('~/') ? homedir() + path.slice(1) : path })
  }
  return out
}

export class Attachments {
  /** Label in the editor → the image it stands for. */
  private readonly images = new Map<string, ImageBlock>()
  /** Paths already refused, so a word is not read again on every key. */
  private readonly refused = new Set<string>()

  constructor(private readonly cwd: () => string) {}

  /**
   * The editor's text with each completed image path replaced by its label, and the line for a path that was
   * refused; `undefined` text when nothing changed.
   */
  attach(text: string, all = false): { text?: string; error?: string } {
    // Every key runs this: text with no `@` and no `/` holds no path.
    if (!text.includes('@') && !text.includes('/')) return {}
    let out = text
    let error: string | undefined
    for (const found of imagePaths(text, all).reverse()) {
      if (this.refused.has(found.path)) continue
      const block = readImageFile(found.path, this.cwd())
      if ('error' in block) {
        error = block.error
        this.refused.add(found.path)
        continue
      }
      const label = imageLabel({ ...block, bytes: imageBytes(block) })
      this.images.set(label, block)
      out = out.slice(0, found.start) + label + out.slice(found.end)
    }
    return { ...(out !== text ? { text: out } : {}), ...(error ? { error } : {}) }
  }

  /**
   * The prompt for `text`: its words with the labels taken out, then the images in the order they appear; or the
   * line that says why it cannot be sent (a path to an image that is not one the model can take).
   */
  content(text: string): { content: ContentBlock[]; text: string } | { error: string } {
    this.refused.clear()
    const attached = this.attach(text, true)
    if (attached.error) return { error: attached.error }
    let words = attached.text ?? text
    const images: { at: number; block: ImageBlock }[] = []
    for (const [label, block] of this.images) {
      for (let at = words.indexOf(label); at >= 0; at = words.indexOf(label, at + 1)) images.push({ at, block })
    }
    images.sort((a, b) => a.at - b.at)
    for (const label of this.images.keys()) words = words.split(label).join(' ')
    words = words.replace(/[ \t]{2,}/g, ' ').trim()
    const content: ContentBlock[] = [
      ...(words ? [{ type: 'text' as const, text: words }] : []),
      ...images.map((image) => image.block),
    ]
    return { content, text: attached.text ?? text }
  }

  clear(): void {
    this.images.clear()
    this.refused.clear()
  }
}
