import { memo, useEffect, useState, type ReactNode } from 'react'

type Highlight = (code: string, language: string) => ReactNode | undefined

let loaded: Highlight | undefined
let loading: Promise<Highlight> | undefined

/** Loads the highlighter once, on the first code block. */
function loadHighlighter(): Promise<Highlight> {
  loading ??= import('./highlight.ts').then((module) => (loaded = module.highlight))
  return loading
}

/** Highlighted trees by language and source, so a block re-rendered with the same text is not highlighted again. */
const cache = new Map<string, ReactNode | undefined>()
const CACHE_MAX = 200
/** Longer code stays plain: highlighting runs on the page's main thread, and a model can write a block of any size. */
export const HIGHLIGHT_MAX_CHARS = 50_000

export function highlighted(highlight: Highlight, code: string, language: string): ReactNode | undefined {
  if (code.length > HIGHLIGHT_MAX_CHARS) return undefined
  const key = `${language}\u0000${code}`
  if (cache.has(key)) return cache.get(key)
  const html = highlight(code, language)
  if (cache.size >= CACHE_MAX) cache.delete(cache.keys().next().value!)
  cache.set(key, html)
  return html
}

/**
 * A fenced code block. It paints as plain text at once and is highlighted when the highlighter has loaded; long lines
 * scroll inside the block. Memoized on its text, so streaming later blocks leaves earlier ones alone.
 */
export const CodeBlock = memo(function CodeBlock({ code, language }: { code: string; language: string }) {
  const [highlight, setHighlight] = useState<Highlight | undefined>(() => loaded)
  useEffect(() => {
    if (highlight || !language) return
    let live = true
    loadHighlighter().then(
      (fn) => {
        if (live) setHighlight(() => fn)
      },
      () => {},
    )
    return () => {
      live = false
    }
  }, [highlight, language])
  const html = highlight ? highlighted(highlight, code, language) : undefined
  return (
    <div className="code-block" data-testid="code-block">
      {language && <div className="code-language">{language}</div>}
      {html === undefined ? (
        <pre>
          <code>{code}</code>
        </pre>
      ) : (
        <pre>
          <code className={`hljs language-${language}`} data-highlighted="yes">
            {html}
          </code>
        </pre>
      )}
    </div>
  )
})
