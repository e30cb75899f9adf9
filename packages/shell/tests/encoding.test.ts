import { afterEach, describe, expect, test } from 'vitest'
import { CappedOutput } from '@keel/shell'
import { makeKeel, textOfContent, type Keel } from '../../../test-support/harness.ts'

let keel: Keel | undefined
afterEach(async () => {
  await keel?.dispose()
  keel = undefined
})

async function bash(command: string) {
  keel ??= await makeKeel()
  let live = ''
  const result = await keel.ctx.tools.execute({
    callId: 'c',
    name: 'bash',
    arguments: JSON.stringify({ command }),
    agent: keel.agent({ persist: false }),
    signal: new AbortController().signal,
    onUpdate: (text) => {
      live += text
    },
  })
  return { text: textOfContent(result.content), live }
}

const count = (text: string, char: string) => text.split(char).length - 1
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/

describe('bash decodes the stream, not each chunk', () => {
  test('a character split across two writes arrives whole, in the result and in the live text', async () => {
    // The shell pauses between the first byte of € and the rest, so the two halves reach Keel as separate chunks.
    const { text, live } = await bash(
      "printf '\\xe2'; sleep 0.2; printf '\\x82\\xac\\n'; { printf '\\xf0\\x9f'; sleep 0.2; printf '\\x98\\x80\\n'; } >&2",
    )
    expect(text).toMatch(/^€\n😀\n\[exit code 0/)
    expect(live).toBe('€\n😀\n')
  })

  test('100,000 € in 7-byte lines: chunk boundaries fall inside characters, none is lost', async () => {
    const { text, live } = await bash("yes '€€' | head -n 50000")
    expect(count(live, '\ufffd')).toBe(0)
    expect(count(live, '€')).toBe(100_000)
    expect(count(text, '\ufffd')).toBe(0)
  })

  test('invalid bytes still show as U+FFFD, and a truncated character at the very end too', async () => {
    const { text } = await bash("printf 'a\\xffb\\xe2\\x82'")
    expect(text).toMatch(/^a\ufffdb\ufffd\n\[exit code 0/)
  })
})

describe('CappedOutput never splits a surrogate pair', () => {
  test('at the head limit', () => {
    const out = new CappedOutput(3, 4)
    out.push('ab😀cdefgh')
    expect(out.text()).not.toMatch(LONE_SURROGATE)
    expect(out.text().startsWith('ab\n')).toBe(true)
  })

  test('at the tail cut', () => {
    const out = new CappedOutput(2, 3)
    out.push('xy')
    out.push('123😀z')
    expect(out.text()).not.toMatch(LONE_SURROGATE)
    expect(out.text().endsWith('\n😀z')).toBe(true)
  })

  test('emoji-only output, cut anywhere, stays well-formed', () => {
    for (let head = 1; head < 8; head++) {
      for (let tail = 1; tail < 8; tail++) {
        const out = new CappedOutput(head, tail)
        for (let i = 0; i < 20; i++) out.push('😀é')
        expect(out.text(), `${head}/${tail}`).not.toMatch(LONE_SURROGATE)
      }
    }
  })
})
