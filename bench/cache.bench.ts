// Prompt caching: the billed-input-token equivalent of a 20-step agent turn with Keel's cache breakpoints and
// without them, as a ratio, in one run. The real Anthropic adapter sends the 20 requests of a growing tool-using
// conversation to the fake server; the logged bodies are then billed by a model of Anthropic's cache
// (https://platform.claude.com/docs/en/build-with-claude/prompt-caching): a breakpoint writes the prefix up to it,
// a later request reads the longest written prefix found at a breakpoint or up to 20 blocks before it, prefixes
// under 1,024 tokens are not cached, and a read bills 0.1×, a write 1.25× input. "Without" is the same bodies with
// every cache_control removed. Tokens are characters / 4. Prints figures; asserts nothing.
import type { Message } from '@keel/session/messages'
import { createAnthropic } from '../packages/llm/src/anthropic-provider.ts'
import { startFakeProvider } from '../test-support/fake-provider.ts'
import { ratio, row } from './stats.ts'

const STEPS = 20
const MIN_TOKENS = 1024
const LOOKBACK = 20

const fake = await startFakeProvider()
const model = createAnthropic('claude-sonnet-5', { baseUrl: fake.url, env: { ANTHROPIC_API_KEY: 'k' }, cwd: '.' })
const tools = ['bash', 'read', 'write', 'edit', 'grep', 'glob', 'todo_write', 'task'].map((name) => ({
  name,
  description: `The ${name} tool: ${'a realistic description of what it does and how to call it. '.repeat(6)}`,
  parameters: { type: 'object', properties: { command: { type: 'string', description: 'what to run or read' } } },
}))
const system = `You are Keel, a coding agent. ${'Inspect before you change things; keep changes small. '.repeat(10)}`
const messages: Message[] = [{ role: 'user', content: [{ type: 'text', text: 'Fix the failing test in src/.' }] }]
for (let step = 1; step <= STEPS; step++) {
  fake.replies.push({
    toolCalls: [{ name: 'bash', id: `toolu_${step}`, arguments: { command: `cat src/f${step}.ts` } }],
  })
  for await (const _ of model.stream({ system, messages, tools }, new AbortController().signal)) {
    // drained: the body is what counts
  }
  messages.push(
    {
      role: 'assistant',
      content: [
        { type: 'tool-call', id: `toolu_${step}`, name: 'bash', arguments: `{"command":"cat src/f${step}.ts"}` },
      ],
    },
    {
      role: 'tool',
      content: [
        {
          type: 'tool-result',
          toolCallId: `toolu_${step}`,
          isError: false,
          content: [{ type: 'text', text: `export const f${step} = 1\n`.repeat(120) }],
        },
      ],
    },
  )
}
await fake.close()

type Block = Record<string, unknown>
interface Body {
  tools?: Block[]
  system?: Block[] | string
  messages: { role: string; content: Block[] | string }[]
}

/** The body's blocks in render order (tools, system, messages), each as the text the cache hashes, and its marks. */
function blocksOf(body: Body): { text: string; marked: boolean }[] {
  const out: { text: string; marked: boolean }[] = []
  const add = (block: Block, tag: string) => {
    const { cache_control, ...rest } = block
    out.push({ text: tag + JSON.stringify(rest), marked: cache_control !== undefined })
  }
  for (const tool of body.tools ?? []) add(tool, 'tool')
  if (typeof body.system === 'string') add({ type: 'text', text: body.system }, 'system')
  else for (const block of body.system ?? []) add(block, 'system')
  for (const message of body.messages) {
    const content = typeof message.content === 'string' ? [{ type: 'text', text: message.content }] : message.content
    for (const block of content) add(block, message.role)
  }
  return out
}

/** Billed-input-token equivalent of a sequence of request bodies under the cache model above. */
function billed(bodies: Body[], keepMarks: boolean): { billed: number; input: number } {
  const written = new Set<string>()
  let total = 0
  let input = 0
  for (const body of bodies) {
    const blocks = blocksOf(body).map((block) => ({ ...block, marked: keepMarks && block.marked }))
    const prefixes: string[] = []
    let text = ''
    for (const block of blocks) prefixes.push((text += block.text))
    const tokens = (i: number) => Math.ceil(prefixes[i]!.length / 4)
    const all = Math.ceil(text.length / 4)
    input += all
    let read = 0
    let lastMark = -1
    blocks.forEach((block, i) => {
      if (!block.marked) return
      lastMark = i
      for (let k = i; k >= Math.max(0, i - LOOKBACK); k--)
        if (written.has(prefixes[k]!)) {
          read = Math.max(read, tokens(k))
          break
        }
    })
    let write = 0
    if (lastMark >= 0 && tokens(lastMark) >= MIN_TOKENS) {
      write = tokens(lastMark) - read
      blocks.forEach((block, i) => {
        if (block.marked && tokens(i) >= MIN_TOKENS) written.add(prefixes[i]!)
      })
    }
    total += all - read - write + read * 0.1 + write * 1.25
  }
  return { billed: Math.round(total), input }
}

const bodies = fake.requests.map((request) => request.body as Body)
const cached = billed(bodies, true)
const plain = billed(bodies, false)
row('requests', String(bodies.length))
row('input tokens sent (sum over the requests)', String(plain.input))
row('billed-input equivalent, no breakpoints', String(plain.billed))
row("billed-input equivalent, Keel's breakpoints", String(cached.billed))
row('ratio cached / uncached', ratio(cached.billed, plain.billed))
