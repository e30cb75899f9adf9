// The rewind RPCs on the web host, through its HTTP routes: the preview lists the files and conflicts and changes
// nothing; the rewind refuses conflicts the person did not agree to, restores the files, forks the conversation and
// announces the fork; bad requests, busy sessions and other directories' sessions are refused.
import { readFileSync, writeFileSync, existsSync } from 'node:fs'
import { join } from 'node:path'
import { afterEach, describe, expect, test } from 'vitest'
import * as checkpointPlugin from '@keel/checkpoint'
import type { SessionEvent } from '@keel/session'
import { hostFixture, waitFor, type HostFixture } from './host-support.ts'

let f: HostFixture | undefined
afterEach(async () => {
  await f?.dispose()
  f = undefined
})

const checkpoints = [checkpointPlugin, { enabled: true, maxFiles: 50_000, maxBytes: 500_000_000 }] as [unknown, unknown]
const bash = (command: string) => ({ name: 'bash', arguments: { command } })

/** Two prompts: the first writes a.txt "two" and made.txt, the second a.txt "three" and later.txt. */
async function twoTurns(): Promise<{ id: string; prompts: number[] }> {
  f = await hostFixture(
    [
      { toolCalls: [bash('echo two > a.txt && echo new > made.txt')] },
      { text: 'one done' },
      { toolCalls: [bash('echo three > a.txt && echo later > later.txt')] },
      { text: 'two done' },
      { text: 'from the fork' },
    ],
    { shell: true, plugins: [checkpoints] },
  )
  writeFileSync(join(f.k.cwd, 'a.txt'), 'one\n')
  const { session } = await f.ok('session.create', {})
  for (const text of ['first', 'second']) {
    await f.ok('session.prompt', { sessionId: session.id, text })
    await f.k.ctx.agents.get(session.id)!.whenIdle()
  }
  const prompts = f.k.ctx.sessions
    .read(session.id)
    .events.filter((event) => event.type === 'user/message')
    .map((event) => event.seq)
  return { id: session.id, prompts }
}

const read = (name: string) => readFileSync(join(f!.k.cwd, name), 'utf8')

describe('rewind on the web host', () => {
  test('preview, a refused conflict, then files and conversation back to the second prompt', async () => {
    const { id, prompts } = await twoTurns()
    const stream = await f!.events()
    const preview = await f!.ok('session.rewindPreview', { sessionId: id, seq: prompts[1]!, scope: 'both' })
    expect(preview).toEqual({
      turn: 2,
      scope: 'both',
      files: {
        changes: [
          { status: 'M', path: 'a.txt' },
          { status: 'D', path: 'later.txt' },
        ],
        conflicts: [],
      },
      fork: true,
    })
    expect(read('a.txt')).toBe('three\n')

    // The person's own edit is in the way: listed, and refused unless they agree to overwrite exactly that file.
    writeFileSync(join(f!.k.cwd, 'a.txt'), 'mine\n')
    const conflicted = await f!.ok('session.rewindPreview', { sessionId: id, seq: prompts[1]!, scope: 'both' })
    expect(conflicted.files?.conflicts).toEqual(['a.txt'])
    const refused = await f!.rpc('session.rewind', { sessionId: id, seq: prompts[1]!, scope: 'both' })
    expect(refused).toMatchObject({ ok: false, error: { code: 'conflict' } })
    expect(!refused.ok && refused.error.message).toContain('a.txt')
    const wrongList = await f!.rpc('session.rewind', {
      sessionId: id,
      seq: prompts[1]!,
      scope: 'both',
      overwrite: ['other.txt'],
    })
    expect(wrongList).toMatchObject({ ok: false, error: { code: 'conflict' } })
    expect(read('a.txt')).toBe('mine\n')
    expect(existsSync(join(f!.k.cwd, 'later.txt'))).toBe(true)
    // No fork was left behind by the refusals.
    expect(f!.k.ctx.sessions.list(f!.k.cwd).filter((s) => s.forkedFrom)).toEqual([])

    const done = await f!.ok('session.rewind', { sessionId: id, seq: prompts[1]!, scope: 'both', overwrite: ['a.txt'] })
    expect(done).toMatchObject({ turn: 2, changed: 2, overwrote: ['a.txt'] })
    expect(read('a.txt')).toBe('two\n')
    expect(existsSync(join(f!.k.cwd, 'later.txt'))).toBe(false)
    expect(read('made.txt')).toBe('new\n')
    const fork = done.fork!
    expect(fork).toMatchObject({ forkedFrom: { sessionId: id }, title: 'first' })
    await waitFor(() => stream.frames.some((frame) => frame.type === 'session/created' && frame.session.id === fork.id))

    // The original records the rewind; the fork holds turn 1 only and lists under its origin.
    const restore = f!.k.ctx.sessions
      .read(id)
      .events.find((e): e is SessionEvent<'checkpoint/restore'> => e.type === 'checkpoint/restore')
    expect(restore?.data).toMatchObject({ toTurn: 2, fork: fork.id, files: ['a.txt', 'later.txt'] })
    const history = await f!.ok('session.history', { sessionId: fork.id })
    const turns = history.events.filter((entry) => entry.event.type === 'turn/start')
    expect(turns.map((entry) => (entry.event as SessionEvent<'turn/start'>).data.turn)).toEqual([1])
    const listed = (await f!.ok('session.list', {})).sessions.find((s) => s.id === fork.id)
    expect(listed?.forkedFrom).toEqual({ sessionId: id, seq: fork.forkedFrom!.seq })

    // The fork takes prompts of its own.
    await f!.ok('session.prompt', { sessionId: fork.id, text: 'again' })
    await f!.k.ctx.agents.get(fork.id)!.whenIdle()
    expect(f!.k.ctx.sessions.read(fork.id).events.filter((e) => e.type === 'turn/start')).toHaveLength(2)
  })

  test('a nested repository the turn made is named as left in place, not listed as a file that changes', async () => {
    f = await hostFixture(
      [
        {
          toolCalls: [
            bash(
              'mkdir -p vendor/lib && cd vendor/lib && git init -q && echo x > l.c && git add l.c && git -c user.name=a -c user.email=a@a commit -qm l',
            ),
          ],
        },
        { text: 'done' },
      ],
      { shell: true, plugins: [checkpoints] },
    )
    const { session } = await f.ok('session.create', {})
    await f.ok('session.prompt', { sessionId: session.id, text: 'vendor it' })
    await f.k.ctx.agents.get(session.id)!.whenIdle()
    const seq = f.k.ctx.sessions.read(session.id).events.find((event) => event.type === 'user/message')!.seq
    const preview = await f.ok('session.rewindPreview', { sessionId: session.id, seq, scope: 'files' })
    expect(preview.files).toEqual({
      changes: [],
      conflicts: [],
      repositories: 'Left as they are (a git repository of their own, whose files Keel does not snapshot): vendor/lib',
    })
  })

  test('files only keeps the conversation; conversation only keeps the files', async () => {
    const { id, prompts } = await twoTurns()
    const files = await f!.ok('session.rewind', { sessionId: id, seq: prompts[0]!, scope: 'files' })
    expect(files.fork).toBeUndefined()
    expect(read('a.txt')).toBe('one\n')
    expect(existsSync(join(f!.k.cwd, 'made.txt'))).toBe(false)
    const conversation = await f!.ok('session.rewind', { sessionId: id, seq: prompts[1]!, scope: 'conversation' })
    expect(conversation).toMatchObject({ changed: 0, overwrote: [] })
    expect(conversation.fork?.forkedFrom?.sessionId).toBe(id)
    expect(read('a.txt')).toBe('one\n')
  })

  test('bad requests: not a prompt, a bad scope, no seq, a bad overwrite list, a bad or unknown id', async () => {
    const { id, prompts } = await twoTurns()
    const turnStart = prompts[0]! - 1
    expect(await f!.rpc('session.rewindPreview', { sessionId: id, seq: turnStart, scope: 'both' })).toMatchObject({
      ok: false,
      error: { code: 'bad-request', message: `seq ${turnStart} is not a prompt of session ${id}` },
    })
    expect(await f!.rpc('session.rewind', { sessionId: id, seq: prompts[0]!, scope: 'everything' })).toMatchObject({
      ok: false,
      error: { code: 'bad-request' },
    })
    expect(await f!.rpc('session.rewind', { sessionId: id, scope: 'both' })).toMatchObject({
      ok: false,
      error: { code: 'bad-request' },
    })
    expect(
      await f!.rpc('session.rewind', { sessionId: id, seq: prompts[0]!, scope: 'both', overwrite: [1] }),
    ).toMatchObject({ ok: false, error: { code: 'bad-request' } })
    expect(await f!.rpc('session.rewind', { sessionId: '../x', seq: 1, scope: 'both' })).toMatchObject({
      ok: false,
      error: { code: 'invalid-session-id' },
    })
    const missing = '00000000-0000-4000-8000-000000000000'
    expect(await f!.rpc('session.rewind', { sessionId: missing, seq: 1, scope: 'both' })).toEqual({
      ok: false,
      error: { code: 'not-found', message: `no session with id ${missing}` },
    })
    expect(read('a.txt')).toBe('three\n')
  })

  test('without @keel/checkpoint the files cannot go back; the conversation still can', async () => {
    f = await hostFixture([{ text: 'hi' }], {})
    const { session } = await f.ok('session.create', {})
    await f.ok('session.prompt', { sessionId: session.id, text: 'hello' })
    await f.k.ctx.agents.get(session.id)!.whenIdle()
    const seq = f.k.ctx.sessions.read(session.id).events.find((e) => e.type === 'user/message')!.seq
    expect(await f.rpc('session.rewindPreview', { sessionId: session.id, seq, scope: 'both' })).toMatchObject({
      ok: false,
      error: { code: 'unavailable', message: expect.stringContaining('@keel/checkpoint') },
    })
    const forked = await f.ok('session.rewind', { sessionId: session.id, seq, scope: 'conversation' })
    // Turn 1 starts the log: its fork holds nothing before it.
    expect(forked.fork?.forkedFrom).toEqual({ sessionId: session.id, seq: 0 })
  })

  test('a session with a running turn is not rewound', async () => {
    f = await hostFixture(
      [{ text: 'hi' }, { toolCalls: [bash('while [ ! -e gate ]; do sleep 0.05; done')] }, { text: 'released' }],
      { shell: true, plugins: [checkpoints] },
    )
    const { session } = await f.ok('session.create', {})
    await f.ok('session.prompt', { sessionId: session.id, text: 'hello' })
    await f.k.ctx.agents.get(session.id)!.whenIdle()
    const seq = f.k.ctx.sessions.read(session.id).events.find((e) => e.type === 'user/message')!.seq
    await f.ok('session.prompt', { sessionId: session.id, text: 'wait at the gate' })
    expect(await f.rpc('session.rewind', { sessionId: session.id, seq, scope: 'files' })).toMatchObject({
      ok: false,
      error: { code: 'busy' },
    })
    writeFileSync(join(f.k.cwd, 'gate'), '')
    await f.k.ctx.agents.get(session.id)!.whenIdle()
  })
})
