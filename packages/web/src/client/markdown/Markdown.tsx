import { memo, type ComponentProps } from 'react'
import ReactMarkdown, { type Components } from 'react-markdown'
import remarkGfm from 'remark-gfm'
import { CodeBlock } from './CodeBlock.tsx'

const ALLOWED_PROTOCOL = /^(https?|mailto):/i

/**
 * Links are kept only with an http(s) or mailto address; anything else (javascript:, data:, relative paths into this
 * host's API) loses its href and shows as text.
 */
export function safeHref(url: string): string {
  return ALLOWED_PROTOCOL.test(url.trim()) ? url : ''
}

function Link({ href, children }: ComponentProps<'a'>) {
  if (!href) return <span className="link-dropped">{children}</span>
  // A new tab without the opener or the referrer: a click is the only way a link is followed.
  return (
    <a href={href} target="_blank" rel="noopener noreferrer">
      {children}
    </a>
  )
}

/** An image would be fetched as soon as it is shown; it becomes a link the reader can choose to open. */
function Image({ src, alt }: ComponentProps<'img'>) {
  const label = alt || 'image'
  return typeof src === 'string' && src ? <Link href={src}>[{label}]</Link> : <span>[{label}]</span>
}

function Code({ className, children, node: _node, ...rest }: ComponentProps<'code'> & { node?: unknown }) {
  const text = String(children ?? '')
  const language = /language-([\w+#-]+)/.exec(className ?? '')?.[1]?.toLowerCase()
  // Fenced code: react-markdown gives it a language class, or a trailing newline when the fence has none.
  if (language !== undefined || text.endsWith('\n'))
    return <CodeBlock code={text.replace(/\n$/, '')} language={language ?? ''} />
  return (
    <code className="code-span" {...rest}>
      {children}
    </code>
  )
}

/** A fence is rendered by Code as its own block, so the `<pre>` react-markdown wraps it in is dropped. */
function Pre({ children }: ComponentProps<'pre'>) {
  return <>{children}</>
}

function Table({ children }: ComponentProps<'table'>) {
  return (
    <div className="table-scroll">
      <table>{children}</table>
    </div>
  )
}

const COMPONENTS: Components = { a: Link, img: Image, code: Code, pre: Pre, table: Table }
const REMARK_PLUGINS = [remarkGfm]

/**
 * Model text as Markdown (GFM). Raw HTML in the text stays text (react-markdown renders it as text without
 * rehype-raw), so nothing in a reply becomes an element the model chose.
 */
export const Markdown = memo(function Markdown({ text }: { text: string }) {
  return (
    <div className="markdown" data-testid="markdown">
      <ReactMarkdown remarkPlugins={REMARK_PLUGINS} components={COMPONENTS} urlTransform={safeHref}>
        {text}
      </ReactMarkdown>
    </div>
  )
})
