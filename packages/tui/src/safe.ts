import { escapeControls, escapeLine } from '@keel/session'

export { escapeControls, escapeLine }

const SGR = /\x1b\[[0-9;:]*m/g

/**
 * A last check on a rendered line: our own SGR colour codes pass, every other control character is shown as a
 * symbol. Text is escaped before rendering already; this catches anything a renderer (Markdown) might rebuild from
 * escaped text, such as an entity that decodes to ESC.
 */
export function guardLine(line: string): string {
  let out = ''
  let last = 0
  for (const match of line.matchAll(SGR)) {
    out += escapeLine(line.slice(last, match.index))
    out += match[0]
    last = match.index + match[0].length
  }
  return out + escapeLine(line.slice(last))
}
