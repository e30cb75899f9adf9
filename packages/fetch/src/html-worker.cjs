// HTML → Markdown, in a worker thread of its own: parsing a hostile page (megabytes of markup, thousands of nested
// elements) takes seconds of CPU, which must never stall the event loop that every session shares. The parent
// bounds the worker's memory and time and terminates it on cancel. Plain CommonJS so the same file runs from the
// sources (its packages from node_modules) and from the bundle (scripts/build.mjs bundles it beside the chunks).
const { parentPort, workerData } = require('node:worker_threads')
const { parseHTML } = require('linkedom')
const { Readability } = require('@mozilla/readability')
const TurndownService = require('turndown')

const { html, url, maxElements } = workerData
// A fragment (no <html>) is parsed as a body, or linkedom leaves the body empty.
const { document } = parseHTML(/<html[\s>]/i.test(html) ? html : `<!doctype html><html><body>${html}</body></html>`)

// Links and images keep working once the page is text: each relative address becomes absolute against the page's
// final URL (linkedom has no base URL to resolve them by itself).
for (const [selector, attribute] of [
  ['a[href]', 'href'],
  ['img[src]', 'src'],
]) {
  for (const element of document.querySelectorAll(selector)) {
    try {
      element.setAttribute(attribute, new URL(element.getAttribute(attribute), url).href)
    } catch {}
  }
}
for (const element of document.querySelectorAll('script, style, noscript, template, iframe, object, embed'))
  element.remove()

const title = (document.querySelector('title')?.textContent ?? '').trim()

// Both the main-content finder and the Markdown converter recurse over the tree: on a page nested thousands deep
// the first takes minutes and the second overflows its stack. Such a page gets its plain text instead.
const MAX_DEPTH = 200
let elements = 0
let depth = 0
const stack = document.documentElement ? [[document.documentElement, 1]] : []
while (stack.length) {
  const [node, level] = stack.pop()
  elements++
  if (level > depth) depth = level
  for (const child of node.children) stack.push([child, level + 1])
}
const plainText = () => (document.body?.textContent ?? '').replace(/[ \t]+/g, ' ').replace(/\n\s*\n\s*/g, '\n\n').trim()

let markdown
let mainContent = false
if (depth > MAX_DEPTH) {
  markdown = plainText()
} else {
  let content
  if (elements <= maxElements) {
    try {
      const article = new Readability(document.cloneNode(true), { maxElemsToParse: maxElements }).parse()
      if (article?.content && article.textContent?.trim()) {
        content = article.content
        mainContent = true
      }
    } catch {
      // The main-content finder gave up: the whole body is converted instead.
    }
  }
  try {
    const turndown = new TurndownService({ headingStyle: 'atx', codeBlockStyle: 'fenced', bulletListMarker: '-' })
    markdown = turndown.turndown(content ?? document.body?.innerHTML ?? html)
  } catch {
    markdown = plainText()
    mainContent = false
  }
}
parentPort.postMessage({ title, markdown, mainContent, plain: depth > MAX_DEPTH })
