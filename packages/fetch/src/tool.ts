import Schema from 'schemastery'
import { defineTool, Type } from '@keel/tools'
import { ConvertError, convert } from './convert.ts'
import { FetchError, fetchTarget, parseTarget, type Resolved } from './request.ts'
import { bareHost } from './address.ts'

export interface Config {
  /** The whole fetch, redirects included, in milliseconds. */
  timeoutMs: number
  /** Body bytes read at most. */
  maxBytes: number
  /** Characters of Markdown or text the model gets at most. */
  maxChars: number
  maxRedirects: number
  /** Hosts the person named that may resolve to a loopback, private or link-local address. */
  privateHosts: string[]
}

export const Config: Schema<Config> = Schema.object({
  timeoutMs: Schema.natural()
    .min(1000)
    .default(30_000)
    .description('Milliseconds one fetch may take, redirects included.'),
  maxBytes: Schema.natural()
    .min(1024)
    .default(5 * 1024 * 1024)
    .description('Bytes of a page read at most.'),
  maxChars: Schema.natural().min(1000).default(60_000).description('Characters of the converted page the model gets.'),
  maxRedirects: Schema.natural().default(5).description('Redirects followed on the same host.'),
  privateHosts: Schema.array(Schema.string())
    .default([])
    .description('Hosts allowed to resolve to a loopback, private or link-local address (named exactly).'),
})

const Parameters = Type.Object(
  { url: Type.String({ description: 'The absolute http:// or https:// URL to fetch.' }) },
  { additionalProperties: false },
)

/** The conversion's own bounds: a hostile page may cost this much CPU and memory, no more. */
const CONVERT = { timeoutMs: 10_000, heapMb: 256, maxElements: 20_000 }

const kb = (bytes: number) => `${Math.max(1, Math.round(bytes / 1024))} KB`

/** What the host of a web_fetch call is, for the permission check and the card ("web_fetch example.com"). */
export function hostOf(url: string): string | undefined {
  try {
    return bareHost(parseTarget(url).hostname)
  } catch {
    return undefined
  }
}

export function webFetchTool(config: Config, resolve?: (host: string) => Promise<Resolved[]>) {
  const privateHosts = new Set(config.privateHosts.map((host) => host.toLowerCase()))
  return defineTool({
    name: 'web_fetch',
    description: `Fetch a web page and return its main content as Markdown (text and JSON as they are). Up to ${kb(config.maxBytes)} are read and ${config.maxChars} characters returned; redirects to another host are reported, not followed. No JavaScript runs, so pages that render in the browser may come back empty.`,
    parameters: Parameters,
    concurrencySafe: true,
    access: (args) => {
      const host = hostOf(args.url)
      return { kind: 'network', hosts: host ? [host] : [] }
    },
    presentCall: (args) => ({ title: args.url, kind: 'fetch', rawInput: args }),
    async execute(args, exec) {
      try {
        const fetched = await fetchTarget(args.url, {
          limits: { timeoutMs: config.timeoutMs, maxBytes: config.maxBytes, maxRedirects: config.maxRedirects },
          signal: exec.signal,
          privateAllowed: (host) => privateHosts.has(host.toLowerCase()),
          ...(resolve ? { resolve } : {}),
        })
        if (fetched.kind === 'elsewhere')
          return `${fetched.url} redirected (HTTP ${fetched.status}) to ${fetched.location}, another host or a plain-http URL: not followed. Call web_fetch with that URL to read it.`
        const page = await convert(fetched.body, fetched.contentType, fetched.url, CONVERT, exec.signal)
        let text = page.text.trim()
        const cut = text.length > config.maxChars ? text.length - config.maxChars : 0
        if (cut) text = `${text.slice(0, config.maxChars)}\n\n[… ${cut} more characters not shown]`
        const facts = [`HTTP ${fetched.status}`, kb(fetched.body.length)]
        if (fetched.truncated) facts.push(`cut at ${kb(config.maxBytes)}`)
        if (page.plain) facts.push('nested too deep for Markdown: its text only')
        else if (page.mainContent === false) facts.push('no main content found: the whole page')
        const heading = `${page.title ? `# ${page.title}\n\n` : ''}Source: ${fetched.url} (${facts.join(', ')})`
        const body = `${heading}\n\n${text || '(the page has no text)'}`
        if (fetched.status >= 400)
          return {
            isError: true,
            content: [
              {
                type: 'text',
                text: `Error: ${fetched.url} answered HTTP ${fetched.status}.\n\n${body.slice(0, 4000)}`,
              },
            ],
          }
        return body
      } catch (error) {
        if (exec.signal.aborted) throw error
        if (error instanceof FetchError || error instanceof ConvertError)
          return { isError: true, content: [{ type: 'text', text: `Error: ${error.message}` }] }
        throw error
      }
    },
  })
}
