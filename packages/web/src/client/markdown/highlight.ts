// The syntax highlighter, loaded on demand (a dynamic import from CodeBlock), so the first paint never waits for it.
// lowlight runs highlight.js grammars into a syntax tree that becomes React elements, so no markup string is ever
// handed to the DOM. Only a set of common languages is bundled; an unknown fence language stays plain text.
import { toJsxRuntime } from 'hast-util-to-jsx-runtime'
import { createLowlight } from 'lowlight'
import type { ReactNode } from 'react'
import { Fragment, jsx, jsxs } from 'react/jsx-runtime'
import bash from 'highlight.js/lib/languages/bash'
import c from 'highlight.js/lib/languages/c'
import cpp from 'highlight.js/lib/languages/cpp'
import css from 'highlight.js/lib/languages/css'
import diff from 'highlight.js/lib/languages/diff'
import go from 'highlight.js/lib/languages/go'
import java from 'highlight.js/lib/languages/java'
import javascript from 'highlight.js/lib/languages/javascript'
import json from 'highlight.js/lib/languages/json'
import markdown from 'highlight.js/lib/languages/markdown'
import python from 'highlight.js/lib/languages/python'
import rust from 'highlight.js/lib/languages/rust'
import shell from 'highlight.js/lib/languages/shell'
import sql from 'highlight.js/lib/languages/sql'
import typescript from 'highlight.js/lib/languages/typescript'
import xml from 'highlight.js/lib/languages/xml'
import yaml from 'highlight.js/lib/languages/yaml'

const lowlight = createLowlight({
  bash,
  c,
  cpp,
  css,
  diff,
  go,
  java,
  javascript,
  json,
  markdown,
  python,
  rust,
  shell,
  sql,
  typescript,
  xml,
  yaml,
})

/** Highlighted elements for `code` (text nodes in `<span class="hljs-…">`), or undefined when the language is unknown. */
export function highlight(code: string, language: string): ReactNode | undefined {
  if (!language || !lowlight.registered(language)) return undefined
  return toJsxRuntime(lowlight.highlight(language, code), { Fragment, jsx, jsxs })
}
