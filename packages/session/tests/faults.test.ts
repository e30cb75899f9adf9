// Failed appends (a full disk, an I/O error) played through the real writer by a seam on its file operations; torn
// and NUL-padded tails; the pairing of tool calls and results in the model's history.
import { appendFileSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs'
import { dirname } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import type { Context } from 'cordis'
import {
  pairToolCalls,
  SessionWriteError,
  sessionFileIo,
  sessionPath,
  UNANSWERED_RESULT,
  type Message,
  type Session,
} from '@keel/session'
import { appendTurn, boot, useTempHome } from './helpers.ts'

useTempHome()
const cwd = '/tmp/keel-faults-project'
const append = { surfaceOp: { op: 'append' } } as const
let ctx: Context | undefined
const original = { ...sessionFileIo }
afterEach(async () => {
  Object.assign(sessionFileIo, original)
  await ctx?.stop()
  ctx = undefined
})

function enospc(): NodeJS.ErrnoException {
  return Object.assign(new Error('ENOSPC: no space left on device, write'), {
    code: 'ENOSPC',
    errno: -28,
    syscall: 'write',
  })
}

/** The disk fills up after `room` more bytes: a write gets what fits, then ENOSPC. */
function diskFull(room: number, options: { truncateFails?: boolean } = {}): void {
  let left = room
  sessionFileIo.write = (fd, buffer, offset, length, position) => {
    if (left <= 0) throw enospc()
    const n = original.write(fd, buffer, offset, Math.min(length, left), position)
    left -= n
    return n
  }
  if (options.truncateFails)
    sessionFileIo.truncate = () => {
      throw Object.assign(new Error('EIO: i/o error, ftruncate'), { code: 'EIO' })
    }
}

function startCall(session: Session, turn: number, callId: string): void {
  session.append('turn/start', { turn, trigger: 'prompt' })
  session.append('step/start', { turn, step: 1 })
  session.append(
    'user/message',
    { message: { role: 'user', content: [{ type: 'text', text: `prompt ${turn}` }] } },
    append,
  )
  session.append(
    'assistant/message',
    {
      turn,
      step: 1,
      message: { role: 'assistant', content: [{ type: 'tool-call', id: callId, name: 'bash', arguments: '{}' }] },
    },
    append,
  )
  session.append('tool/call', { turn, step: 1, callId, name: 'bash', arguments: '{}' })
}

function result(turn: number, callId: string) {
  return { turn, step: 1, callId, content: [{ type: 'text' as const, text: 'x'.repeat(5000) }], isError: false }
}

describe('a failed append', () => {
  it('throws one line naming the event, the file and the cause; cuts the half-written line off; memory and disk agree; later appends work', async () => {
    ctx = await boot()
    const session = ctx.sessions.create({ cwd, id: 'full' })
    startCall(session, 1, 'c1')
    const path = sessionPath(cwd, 'full')
    const size = statSync(path).size
    diskFull(100) // the 5 KB result line gets 100 bytes in
    let error: Error | undefined
    try {
      session.append('tool/result', result(1, 'c1'), append)
    } catch (caught) {
      error = caught as Error
    }
    expect(error).toBeInstanceOf(SessionWriteError)
    expect(error!.message).toBe(
      `could not write tool/result to the session log ${path}: ENOSPC (no space left on device)`,
    )
    expect((error as SessionWriteError).code).toBe('ENOSPC')
    expect(statSync(path).size).toBe(size)
    expect(session.seq).toBe(5)
    Object.assign(sessionFileIo, original) // space again
    session.append('step/end', { turn: 1, step: 1 })
    session.append('turn/end', { turn: 1, reason: 'error', message: error!.message })
    ctx.sessions.close(session)
    const { session: reopened, repairs } = ctx.sessions.open('full')
    expect(reopened.seq).toBe(7)
    expect(repairs).toEqual([
      `${path}: 1 earlier tool call has no result on the log (c1); the model sees it answered as interrupted`,
    ])
    // The model's history pairs the call with an error result, right after it (before the next prompt).
    reopened.append('turn/start', { turn: 2, trigger: 'prompt' })
    reopened.append('step/start', { turn: 2, step: 1 })
    reopened.append('user/message', { message: { role: 'user', content: [{ type: 'text', text: 'again' }] } }, append)
    const messages = reopened.deriveMessages()
    expect(messages.map((m) => m.role)).toEqual(['user', 'assistant', 'tool', 'user'])
    expect(messages[2]!.content).toEqual([
      { type: 'tool-result', toolCallId: 'c1', isError: true, content: [{ type: 'text', text: UNANSWERED_RESULT }] },
    ])
    expect(readdirSync(dirname(path)).filter((name) => name.endsWith('.tmp'))).toEqual([])
  })

  it('when even the cut-back fails, the writer refuses further writes and the next load drops the torn, NUL-padded tail', async () => {
    ctx = await boot()
    const session = ctx.sessions.create({ cwd, id: 'torn' })
    startCall(session, 1, 'c1')
    const path = sessionPath(cwd, 'torn')
    const size = statSync(path).size
    diskFull(100, { truncateFails: true })
    expect(() => session.append('tool/result', result(1, 'c1'), append)).toThrow(SessionWriteError)
    Object.assign(sessionFileIo, original)
    expect(() => session.append('tool/result', result(1, 'c1'), append)).toThrow(
      /not writable after an earlier failure/,
    )
    expect(statSync(path).size).toBe(size + 100)
    appendFileSync(path, Buffer.alloc(4096)) // the zeros some filesystems leave after a failed write
    ctx.sessions.close(session)
    const { session: reopened, repairs } = ctx.sessions.open('torn')
    expect(repairs[0]).toBe(`${path}: dropped a torn last line (line 7); the file now ends at the last whole event`)
    expect(repairs[1]).toContain(
      'turn 1 was left open by a crash; closed it as interrupted with an error result for 1 unanswered tool call',
    )
    expect(reopened.last?.type).toBe('turn/end')
    expect(reopened.deriveMessages().map((m) => m.role)).toEqual(['user', 'assistant', 'tool'])
  })

  it('a failed header write leaves no file and no lock behind', async () => {
    ctx = await boot()
    diskFull(10)
    expect(() => ctx!.sessions.create({ cwd, id: 'nohead' })).toThrow(
      /could not write the header to the session log .*nohead\.jsonl: ENOSPC/,
    )
    Object.assign(sessionFileIo, original)
    expect(readdirSync(dirname(sessionPath(cwd, 'nohead')))).toEqual([])
    ctx.sessions.close(ctx.sessions.create({ cwd, id: 'nohead' })) // the id is free again
  })
})

describe('durability points of a batch (together)', () => {
  /** Counts fsyncs, and fails them from the `failFrom`-th on. */
  function countSyncs(failFrom = Number.POSITIVE_INFINITY): { count: number } {
    const seen = { count: 0 }
    sessionFileIo.fsync = (fd) => {
      if (++seen.count >= failFrom) throw Object.assign(new Error('EIO: i/o error, fsync'), { code: 'EIO' })
      original.fsync(fd)
    }
    return seen
  }

  function startCalls(session: Session, ids: string[]): void {
    startCall(session, 1, ids[0]!)
    for (const id of ids.slice(1))
      session.append('tool/call', { turn: 1, step: 1, callId: id, name: 'bash', arguments: '{}' })
  }

  it('three results appended together cost one fsync, at the end; one at a time, three', async () => {
    ctx = await boot()
    const session = ctx.sessions.create({ cwd, id: 'batch' })
    startCalls(session, ['c1', 'c2', 'c3'])
    const path = sessionPath(cwd, 'batch')
    const syncs = countSyncs()
    let inside = -1
    session.together(() => {
      for (const id of ['c1', 'c2', 'c3']) session.append('tool/result', result(1, id), append)
      inside = syncs.count
    })
    expect(inside).toBe(0)
    expect(syncs.count).toBe(1)
    expect(readFileSync(path, 'utf8').trim().split('\n')).toHaveLength(1 + 10) // the header, 7 events before, 3 results
    session.append('step/end', { turn: 1, step: 1 })
    expect(syncs.count).toBe(1) // not a durability point
    session.append('turn/end', { turn: 1, reason: 'completed' })
    expect(syncs.count).toBe(2)
    const alone = ctx.sessions.create({ cwd, id: 'alone' })
    startCalls(alone, ['c1', 'c2', 'c3'])
    syncs.count = 0
    for (const id of ['c1', 'c2', 'c3']) alone.append('tool/result', result(1, id), append)
    expect(syncs.count).toBe(3)
  })

  it('a batch whose last fsync fails throws one line and the writer refuses later writes; the log reopens paired', async () => {
    ctx = await boot()
    const session = ctx.sessions.create({ cwd, id: 'badsync' })
    startCalls(session, ['c1', 'c2'])
    const path = sessionPath(cwd, 'badsync')
    countSyncs(1)
    expect(() =>
      session.together(() => {
        for (const id of ['c1', 'c2']) session.append('tool/result', result(1, id), append)
      }),
    ).toThrow(`could not write a batch of events to the session log ${path}: EIO`)
    Object.assign(sessionFileIo, original)
    expect(() => session.append('step/end', { turn: 1, step: 1 })).toThrow(/not writable after an earlier failure/)
    ctx.sessions.close(session)
    const { session: reopened } = ctx.sessions.open('badsync')
    // The results reached the file (only their fsync failed); the open turn is closed as a crash's would be.
    expect(reopened.events.filter((event) => event.type === 'tool/result').map((event) => event.data.callId)).toEqual([
      'c1',
      'c2',
    ])
    expect(reopened.last?.type).toBe('turn/end')
  })
})

describe('torn tails', () => {
  async function withTail(
    tail: string | Buffer,
  ): Promise<{ repairs: string[]; valid: number; size: number; path: string }> {
    ctx ??= await boot()
    const id = `tail-${Math.random().toString(36).slice(2)}`
    const session = ctx.sessions.create({ cwd, id })
    appendTurn(session, 1)
    ctx.sessions.close(session)
    const path = sessionPath(cwd, id)
    const valid = statSync(path).size
    appendFileSync(path, tail)
    const { session: reopened, repairs } = ctx.sessions.open(id)
    ctx.sessions.close(reopened)
    return { repairs, valid, size: statSync(path).size, path }
  }

  it.each([
    ['only NULs', Buffer.alloc(4096)],
    ['NUL-only lines', '\0\0\0\n\0\0\0\0\n'],
    ['a torn line padded with NULs and a newline', '{"type":"step/start","seq":11,"da\0\0\0\0\n'],
    ['a torn line then NUL lines', '{"type":"step/st\n\0\0\0\n\0\n\0\0'],
  ])('%s at the end: repaired like a torn line', async (_, tail) => {
    const { repairs, valid, size, path } = await withTail(tail)
    expect(repairs[0]).toMatch(
      new RegExp(`^${path.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}: dropped a torn last line \\(line 13\\)`),
    )
    expect(size).toBe(valid)
  })

  it('a NUL line in front of a good event is damage, refused', async () => {
    ctx = await boot()
    const session = ctx.sessions.create({ cwd, id: 'middle' })
    appendTurn(session, 1)
    ctx.sessions.close(session)
    const path = sessionPath(cwd, 'middle')
    const lines = readFileSync(path, 'utf8').split('\n')
    lines.splice(3, 0, '\0\0\0\0')
    writeFileSync(path, lines.join('\n'))
    expect(() => ctx!.sessions.open('middle')).toThrow(
      `${path}:4: line is not JSON (damage inside the log, not a torn tail)`,
    )
  })
})

describe('pairToolCalls (what deriveMessages yields)', () => {
  const user = (text: string): Message => ({ role: 'user', content: [{ type: 'text', text }] })
  const ask = (...ids: string[]): Message => ({
    role: 'assistant',
    content: ids.map((id) => ({ type: 'tool-call' as const, id, name: 'bash', arguments: '{}' })),
  })
  const answer = (id: string): Message => ({
    role: 'tool',
    content: [{ type: 'tool-result', toolCallId: id, isError: false, content: [] }],
  })
  const ids = (messages: Message[]) =>
    messages.map((m) =>
      m.role === 'tool'
        ? `tool:${m.content.map((b) => b.toolCallId).join(',')}${m.content.some((b) => b.isError) ? '!' : ''}`
        : m.role,
    )

  it('returns a well-paired history unchanged, message for message', () => {
    const history = [user('a'), ask('1', '2'), answer('1'), answer('2'), ask(), user('b')]
    const paired = pairToolCalls(history)
    expect(paired).toEqual(history)
    for (const [i, message] of paired.entries()) expect(message).toBe(history[i])
  })

  it('answers a call with no result anywhere in the history, right after its group', () => {
    expect(
      ids(pairToolCalls([user('a'), ask('1', '2'), answer('2'), user('b'), ask('3'), answer('3'), ask('4')])),
    ).toEqual(['user', 'assistant', 'tool:2', 'tool:1!', 'user', 'assistant', 'tool:3', 'assistant', 'tool:4!'])
  })

  it('leaves out a result that answers no call before it, or answers one twice', () => {
    expect(
      ids(pairToolCalls([user('a'), answer('9'), ask('1'), answer('1'), answer('1'), user('b'), answer('1')])),
    ).toEqual(['user', 'assistant', 'tool:1', 'user'])
  })

  it('a session whose tool/result was vetoed still derives a paired history', async () => {
    ctx = await boot()
    const session = ctx.sessions.create({ cwd, id: 'veto', persist: false })
    startCall(session, 1, 'c1')
    const dispose = ctx.on('session/validate', (_, event) => {
      if (event.type === 'tool/result') throw new Error('no')
    })
    expect(() => session.append('tool/result', result(1, 'c1'), append)).toThrow('no')
    dispose()
    session.append('step/end', { turn: 1, step: 1 })
    session.append('turn/end', { turn: 1, reason: 'error' })
    for (const message of session.deriveMessages()) {
      if (message.role !== 'assistant') continue
      for (const block of message.content) {
        if (block.type === 'tool-call')
          expect(
            session.deriveMessages().some((m) => m.role === 'tool' && m.content.some((r) => r.toolCallId === block.id)),
          ).toBe(true)
      }
    }
  })
})
