// The syntax highlighter, loaded on demand (a dynamic import from CodeBlock), so the first paint never waits for it.
// Only the core and a set of common languages are bundled; an unknown fence language stays plain text.
import hljs from 'highlight.js/lib/core'
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

const LANGUAGES = { bash, c, cpp, css, diff, go, java, javascript, json, markdown, python, rust, shell, sql, typescript, xml, yaml }
for (const [name, language] of Object.entries(LANGUAGES)) hljs.registerLanguage(name, language)

/**
 * Highlighted HTML for `code`, or undefined when the language is unknown. highlight.js escapes the source text itself
 * (`&`, `<`, `>`, quotes) and adds only `<span class="hljs-…">`, so the result is safe to set as markup.
 */
export function highlight(code: string, language: string): string | undefined {
  if (!language || !hljs.getLanguage(language)) return undefined
  return hljs.highlight(code, { language, ignoreIllegals: true }).value
}
