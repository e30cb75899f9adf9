// What a fetched body becomes for the model: Markdown for HTML (main content, via the worker), the text itself for
// text and JSON (pretty-printed when it parses), and a one-line refusal for anything else. Terminal control
// characters are removed from every result: fetched bytes are untrusted and must not reach the model as escapes.
import type { Worker } from 'node:worker_threads'
import { createRequire } from 'node:module'

export interface Converted {
  /** The page's title, when it has one. */
  title?: string
  text: string
  /** For HTML: whether a main-content block was found (else the whole body was converted). */
  mainContent?: boolean
  /** For HTML: nested too deep to convert, so only its text is given. */
  plain?: boolean
}

export class ConvertError extends Error {}

export interface ConvertLimits {
  /** How long the HTML conversion may take. */
  timeoutMs: number
  /** The worker's heap. */
  heapMb: number
  /** Elements the main-content finder examines before it gives up (the whole body is converted then). */
  maxElements: number
}

/** The media type (lowercase, no parameters) and charset of a Content-Type header. */
function parseContentType(header: string | undefined): { type: string; charset?: string } {
  if (!header) return { type: '' }
  const [type, ...params] = header.split(';')
  const charset = params
    .map((param) => param.trim().match(/^charset\s*=\s*"?([^";\s]+)"?/i)?.[1])
    .find((value) => value !== undefined)
  return { type: type!.trim().toLowerCase(), ...(charset ? { charset: charset.toLowerCase() } : {}) }
}

const isHtml = (type: string) => type === 'text/html' || type === 'application/xhtml+xml'
const isJson = (type: string) => type === 'application/json' || type.endsWith('+json')
const isText = (type: string) =>
  type.startsWith('text/') ||
  ['application/xml', 'application/javascript', 'application/x-yaml', 'application/yaml', 'application/toml'].includes(
    type,
  ) ||
  type.endsWith('+xml')

/** What a body without a usable Content-Type looks like, from its first bytes. */
function sniffType(body: Buffer): string {
  const head = body.subarray(0, 512).toString('latin1').trimStart().toLowerCase()
  if (head.startsWith('<!doctype html') || head.startsWith('<html') || /<(head|body|p|div)[\s>]/.test(head))
    return 'text/html'
  if (head.startsWith('{') || head.startsWith('[')) return 'application/json'
  if (head.startsWith('%pdf')) return 'application/pdf'
  return body.subarray(0, 512).includes(0) ? 'application/octet-stream' : 'text/plain'
}

function decode(body: Buffer, charset: string | undefined): string {
  try {
    return new TextDecoder(charset ?? 'utf-8').decode(body)
  } catch {
    return new TextDecoder('utf-8').decode(body) // an unknown charset label
  }
}

/** C0 and C1 controls except tab and newline, DEL, and the bidi and zero-width format characters. */
const CONTROLS = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u200b-\u200f\u202a-\u202e\u2066-\u2069]/g
const withoutControls = (text: string) => text.replace(/\r\n?/g, '\n').replace(CONTROLS, '')

const kb = (bytes: number) => `${Math.max(1, Math.round(bytes / 1024))} KB`

export async function convert(
  body: Buffer,
  contentType: string | undefined,
  url: string,
  limits: ConvertLimits,
  signal: AbortSignal,
): Promise<Converted> {
  const parsed = parseContentType(contentType)
  const type = !parsed.type || parsed.type === 'application/octet-stream' ? sniffType(body) : parsed.type
  if (isHtml(type)) {
    const html = decode(body, parsed.charset ?? metaCharset(body))
    const page = await htmlToMarkdown(html, url, limits, signal)
    return {
      ...(page.title ? { title: withoutControls(page.title) } : {}),
      text: withoutControls(page.markdown),
      mainContent: page.mainContent,
      ...(page.plain ? { plain: true } : {}),
    }
  }
  if (isJson(type)) {
    const text = decode(body, parsed.charset)
    try {
      return { text: withoutControls(JSON.stringify(JSON.parse(text), null, 2)) }
    } catch {
      return { text: withoutControls(text) }
    }
  }
  if (isText(type)) return { text: withoutControls(decode(body, parsed.charset)) }
  if (type === 'application/pdf')
    throw new ConvertError(`the page is a PDF (${kb(body.length)}); web_fetch returns HTML, text and JSON only`)
  throw new ConvertError(
    `the page is ${type} (${kb(body.length)}), not text; web_fetch returns HTML, text and JSON only`,
  )
}

/** `<meta charset>` or its http-equiv form in the first KB, for pages whose header names no charset. */
function metaCharset(body: Buffer): string | undefined {
  return body
    .subarray(0, 1024)
    .toString('latin1')
    .match(/<meta[^>]+charset\s*=\s*["']?([\w-]+)/i)?.[1]
    ?.toLowerCase()
}

interface WorkerAnswer {
  title: string
  markdown: string
  mainContent: boolean
  plain: boolean
}

/** Runs src/html-worker.cjs (dist/html-worker.cjs in the bundle) with bounded heap and time; cancel terminates it. */
function htmlToMarkdown(html: string, url: string, limits: ConvertLimits, signal: AbortSignal): Promise<WorkerAnswer> {
  const { Worker: WorkerThread } = createRequire(import.meta.url)(
    'node:worker_threads',
  ) as typeof import('node:worker_threads')
  return new Promise((resolve, reject) => {
    let worker: Worker
    try {
      worker = new WorkerThread(new URL('./html-worker.cjs', import.meta.url), {
        workerData: { html, url, maxElements: limits.maxElements },
        resourceLimits: { maxOldGenerationSizeMb: limits.heapMb, maxYoungGenerationSizeMb: 32 },
        stdout: true,
        stderr: true,
      })
    } catch (error) {
      reject(new ConvertError(`cannot start the HTML converter: ${(error as Error).message}`))
      return
    }
    let settled = false
    const finish = (error: Error | undefined, answer?: WorkerAnswer) => {
      if (settled) return
      settled = true
      clearTimeout(timer)
      signal.removeEventListener('abort', onAbort)
      void worker.terminate()
      if (error) reject(error)
      else resolve(answer!)
    }
    const onAbort = () => finish(signal.reason instanceof Error ? signal.reason : new Error('cancelled'))
    const timer = setTimeout(
      () => finish(new ConvertError(`the page took over ${limits.timeoutMs / 1000} s to convert to Markdown`)),
      limits.timeoutMs,
    )
    signal.addEventListener('abort', onAbort, { once: true })
    worker.once('message', (answer: WorkerAnswer) => finish(undefined, answer))
    worker.once('error', (error) =>
      finish(
        new ConvertError(
          (error as { code?: string }).code === 'ERR_WORKER_OUT_OF_MEMORY'
            ? 'the page needs more memory to convert than web_fetch allows'
            : `the page could not be converted: ${error.message}`,
        ),
      ),
    )
    worker.once('exit', () => finish(new ConvertError('the HTML converter stopped without an answer')))
  })
}
