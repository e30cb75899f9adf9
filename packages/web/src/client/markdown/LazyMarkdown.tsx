import { lazy, Suspense } from 'react'

const Renderer = lazy(() => import('./Markdown.tsx').then((module) => ({ default: module.Markdown })))

/**
 * Markdown with the renderer in its own chunk: the page paints (text as plain text) without waiting for the parser,
 * which most of the bundle would otherwise be.
 */
export function LazyMarkdown({ text }: { text: string }) {
  return (
    <Suspense fallback={<div className="markdown plain">{text}</div>}>
      <Renderer text={text} />
    </Suspense>
  )
}
