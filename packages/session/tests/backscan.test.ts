import { appendFileSync, closeSync, mkdtempSync, openSync, rmSync, statSync, writeFileSync, writeSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { backscan, readSessionFile, type SessionEvent } from '@keel/session'
import { useStores, useTempHome } from './helpers.ts'

const EVENTS = 1_000_000
let dir = ''
let big = ''
let bigSize = 0
let offsets = new Map<number, number>()

/**
 * Writes a session file of `count` small events straight to disk (no store), with `special` events placed by seq.
 * Returns where each special line starts (all lines are ASCII, so characters are bytes).
 */
function generate(path: string, count: number, special: (seq: number) => string | undefined): Map<number, number> {
  const offsets = new Map<number, number>()
  const fd = openSync(path, 'w')
  let written = writeSync(
    fd,
    JSON.stringify({ type: 'session', version: 1, id: 'big', createdAt: 0, cwd: '/big' }) + '\n',
  )
  let chunk = ''
  for (let seq = 0; seq < count; seq++) {
    const line = special(seq)
    if (line) offsets.set(seq, written + chunk.length)
    chunk += line ?? `{"type":"test/note","seq":${seq},"time":0,"data":{"text":"n"}}\n`
    if (chunk.length > 1 << 20) {
      written += writeSync(fd, chunk)
      chunk = ''
    }
  }
  writeSync(fd, chunk)
  closeSync(fd)
  return offsets
}

const todo = (seq: number, label: string) =>
  `{"type":"todo/write","seq":${seq},"time":0,"data":{"todos":[{"content":"${label}","status":"in_progress"}]}}\n`
const latestTodo = (event: SessionEvent) =>
  (event.type as string) === 'todo/write'
    ? (event.data as { todos: { content: string }[] }).todos[0]!.content
    : undefined

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'keel-backscan-'))
  big = join(dir, 'big.jsonl')
  // Plans at seq 10, 20,000 events before the end (~1.2 MB) and 1,000 before the end (~60 KB).
  offsets = generate(big, EVENTS, (seq) =>
    seq === 10
      ? todo(seq, 'first')
      : seq === EVENTS - 20_000
        ? todo(seq, 'deeper')
        : seq === EVENTS - 1000
          ? todo(seq, 'latest')
          : undefined,
  )
  bigSize = statSync(big).size
})
afterAll(() => rmSync(dir, { recursive: true, force: true }))

describe('backscan', () => {
  it('finds the latest matching event of a 1,000,000-event file reading only its tail', () => {
    expect(bigSize).toBeGreaterThan(50_000_000)
    const found = backscan(big, latestTodo)
    expect(found.value).toBe('latest')
    expect(found.bytesRead).toBeLessThanOrEqual(128 * 1024)
    expect(found.bytesRead / bigSize).toBeLessThan(0.003)
  })

  it('reads in proportion to how far back the answer lies, not to the file size', () => {
    const distance = (seq: number) => bigSize - offsets.get(seq)!
    const deeper = backscan(big, (event) => (latestTodo(event) === 'deeper' ? event.seq : undefined))
    expect(deeper.value).toBe(EVENTS - 20_000)
    expect(deeper.bytesRead).toBeGreaterThanOrEqual(distance(EVENTS - 20_000))
    expect(deeper.bytesRead).toBeLessThan(distance(EVENTS - 20_000) + 64 * 1024)
    expect(backscan(big, (event) => (event.seq === EVENTS - 1 ? true : undefined)).bytesRead).toBe(64 * 1024)
  })

  it('passes over a torn tail and never visits the header', () => {
    const path = join(dir, 'torn.jsonl')
    generate(path, 100, (seq) => (seq === 50 ? todo(seq, 'kept') : undefined))
    appendFileSync(path, todo(100, 'torn').slice(0, -1)) // a whole line but for its newline: torn
    const visited: number[] = []
    const found = backscan(path, (event) => {
      visited.push(event.seq)
      return latestTodo(event)
    })
    expect(found.value).toBe('kept')
    expect(visited[0]).toBe(99)
    expect(readSessionFile(path).tornLine).toBe(102) // the same line a load drops
    const all: unknown[] = []
    expect(
      backscan(path, (event) => {
        all.push(event)
        return undefined
      }).value,
    ).toBeUndefined()
    expect(all).toHaveLength(100)
    expect(all.some((event) => (event as { type: string }).type === 'session')).toBe(false)
  })

  it('handles lines far longer than its block size, and a file of just a header', () => {
    const path = join(dir, 'long.jsonl')
    const text = 'y'.repeat(300_000)
    writeFileSync(
      path,
      [
        JSON.stringify({ type: 'session', version: 1, id: 'long', createdAt: 0, cwd: '/' }),
        JSON.stringify({ type: 'test/note', seq: 0, time: 0, data: { text } }),
        JSON.stringify({ type: 'test/note', seq: 1, time: 0, data: { text: 'short' } }),
        '',
      ].join('\n'),
    )
    const seen: string[] = []
    backscan(path, (event) => {
      seen.push((event.data as { text: string }).text)
      return undefined
    })
    expect(seen).toEqual(['short', text])
    const empty = join(dir, 'empty.jsonl')
    writeFileSync(empty, JSON.stringify({ type: 'session', version: 1, id: 'e', createdAt: 0, cwd: '/' }) + '\n')
    expect(backscan(empty, () => true)).toEqual({ value: undefined, bytesRead: statSync(empty).size })
  })
})

describe('sessions.backscan', () => {
  useTempHome()
  for (const kind of useStores())
    it.skipIf(kind.skip)(`scans a stored session from its end (${kind.name} store)`, async () => {
      const ctx = await kind.boot()
      try {
        const session = ctx.sessions.create({ cwd: '/p', id: 'stored' })
        session.append('turn/start', { turn: 1, trigger: 'prompt' })
        for (let i = 0; i < 100; i++) session.append('test/note', { text: `t${i}` })
        const found = ctx.sessions.backscan('stored', (event) =>
          event.type === 'test/note' ? event.data.text : undefined,
        )
        expect(found.value).toBe('t99')
        const first = ctx.sessions.backscan('stored', (event) => (event.type === 'turn/start' ? event.seq : undefined))
        expect(first.value).toBe(0)
        // The database reads in proportion to how far back the answer lies (the file's 64 KB blocks hold this whole
        // log; its proportion is proven above on a long file).
        if (kind.name === 'postgres') expect(first.bytesRead).toBeGreaterThan(found.bytesRead * 20)
        expect(() => ctx.sessions.backscan('nope', () => 1)).toThrow(/no session with id nope/)
      } finally {
        await ctx.stop()
      }
    })
})
