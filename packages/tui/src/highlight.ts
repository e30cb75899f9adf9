// Syntax highlighting for fenced code in model text, through lowlight (highlight.js grammars as a tree, so every piece
// of code is escaped on its own before our SGR codes wrap it: no HTML to parse, nothing from the model reaches the
// terminal raw). Loading the grammars takes a noticeable fraction of a second, so it happens lazily: the first code
// block starts the load and shows plain until it is done; `onReady` listeners then redraw.
import type { Element, ElementContent, Root } from 'hast'
import { escapeLine } from './safe.ts'
import { style, type Styler } from './style.ts'

type Lowlight = ReturnType<typeof import('lowlight').createLowlight>

let lowlight: Lowlight | undefined
let loading: Promise<void> | undefined
const listeners = new Set<() => void>()

/** Starts loading the grammars (once); resolves when code blocks highlight. */
export function loadHighlighter(): Promise<void> {
  loading ??= import('lowlight').then(
    ({ createLowlight, common }) => {
      lowlight = createLowlight(common)
      for (const listener of listeners) listener()
      listeners.clear()
    },
    // Without the grammars code stays plain; a failed load must not take the UI down as an unhandled rejection.
    () => undefined,
  )
  return loading
}

/** Whether code blocks highlight now (a block drawn before this is plain until redrawn). */
export function highlighterLoaded(): boolean {
  return lowlight !== undefined
}

/** Called once when the grammars have loaded (a frame drawn before then shows code plain). Returns an unsubscribe. */
export function onHighlighterReady(listener: () => void): () => void {
  listeners.add(listener)
  return () => listeners.delete(listener)
}

// highlight.js scopes to colours: a few groups, readable on dark and light terminals alike.
const SCOPES: Record<string, Styler> = {
  keyword: style.magenta,
  built_in: style.cyan,
  type: style.cyan,
  literal: style.cyan,
  number: style.yellow,
  string: style.green,
  regexp: style.red,
  subst: (text) => text,
  symbol: style.yellow,
  class: style.yellow,
  function: style.blue,
  title: style.blue,
  params: (text) => text,
  comment: style.gray,
  doctag: style.gray,
  meta: style.gray,
  attr: style.yellow,
  attribute: style.yellow,
  name: style.red,
  tag: style.gray,
  variable: style.red,
  'template-variable': style.red,
  addition: style.green,
  deletion: style.red,
  section: style.bold,
  strong: style.bold,
  emphasis: style.italic,
}

function stylerOf(node: Element): Styler | undefined {
  const classes = (node.properties?.className as string[] | undefined) ?? []
  for (const name of classes) {
    const scope = name.replace(/^hljs-/, '')
    const styler = SCOPES[scope] ?? SCOPES[scope.split('.')[0]!] ?? SCOPES[scope.split('_')[0]!]
    if (styler) return styler
  }
  return undefined
}

/**
 * The tree as terminal lines. Styles are applied per line piece (an SGR run never spans a newline), each text piece
 * escaped first, so a line stands alone when the transcript wraps or cuts it.
 */
function toLines(root: Root): string[] {
  const lines: string[] = ['']
  const walk = (nodes: ElementContent[], stylers: Styler[]) => {
    for (const node of nodes) {
      if (node.type === 'text') {
        node.value.split('\n').forEach((piece, i) => {
          if (i > 0) lines.push('')
          const text = escapeLine(piece.replace(/\t/g, '    '))
          lines[lines.length - 1] += stylers.reduceRight((out, styler) => styler(out), text)
        })
      } else if (node.type === 'element') {
        const styler = stylerOf(node)
        walk(node.children, styler ? [...stylers, styler] : stylers)
      }
    }
  }
  walk(root.children as ElementContent[], [])
  return lines
}

/** Unhighlighted code (no grammar loaded yet, or a language it does not know): escaped, in the code colour. */
function plainLines(code: string): string[] {
  return code.split('\n').map((line) => style.yellow(escapeLine(line.replace(/\t/g, '    '))))
}

/**
 * Longer code stays plain: highlighting is synchronous on the UI thread, and a model can write a block of any size.
 * Streaming redraws a message on every delta, so finished blocks are kept (by language and text) instead of being
 * highlighted again each time.
 */
export const HIGHLIGHT_MAX_CHARS = 50_000
const HIGHLIGHTED_MAX = 100
const highlighted = new Map<string, string[]>()

/**
 * pi-tui's `highlightCode` hook: one terminal line per line of `code`. A named language lowlight knows is used; an
 * unnamed or unknown one stays plain (guessing the language of a shell transcript paints it at random).
 */
export function highlightCode(code: string, lang?: string): string[] {
  if (!lowlight) {
    void loadHighlighter()
    return plainLines(code)
  }
  const language = lang?.trim().split(/\s/)[0]?.toLowerCase()
  if (!language || !lowlight.registered(language) || code.length > HIGHLIGHT_MAX_CHARS) return plainLines(code)
  const key = `${language}\u0000${code}`
  const cached = highlighted.get(key)
  if (cached) return [...cached]
  let lines: string[]
  try {
    lines = toLines(lowlight.highlight(language, code))
  } catch {
    lines = plainLines(code)
  }
  if (highlighted.size >= HIGHLIGHTED_MAX) highlighted.delete(highlighted.keys().next().value!)
  highlighted.set(key, lines)
  return [...lines]
}
