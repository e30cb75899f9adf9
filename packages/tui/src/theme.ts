import type { EditorTheme, MarkdownTheme } from '@mariozechner/pi-tui'
import { highlightCode } from './highlight.ts'
import { style } from './style.ts'

export const markdownTheme: MarkdownTheme = {
  heading: (text) => style.bold(style.cyan(text)),
  link: style.blue,
  linkUrl: style.dim,
  code: style.yellow,
  codeBlock: (text) => text,
  codeBlockBorder: style.gray,
  quote: style.italic,
  quoteBorder: style.gray,
  hr: style.gray,
  listBullet: style.cyan,
  bold: style.bold,
  italic: style.italic,
  strikethrough: style.strike,
  underline: style.underline,
  highlightCode,
}

export const editorTheme: EditorTheme = {
  borderColor: style.gray,
  selectList: {
    selectedPrefix: style.cyan,
    selectedText: style.bold,
    description: style.dim,
    scrollInfo: style.dim,
    noMatch: style.dim,
  },
}
