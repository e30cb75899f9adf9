import { appendFileSync, existsSync, readFileSync, readdirSync, statSync, truncateSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import type { Context } from 'cordis'
import {
  INTERRUPTED_RESULT,
  SessionFileError,
  SessionLockedError,
  SessionNotFoundError,
  cwdSlug,
  findOpenTurn,
  readLock,
  readSessionFile,
  type Session,
  type SessionEvent,
  type SessionHeader,
} from '@keel/session'
import { hostName } from '@keel/store-pg'
import { appendTurn, lockSince, useStores, useTempHome } from './helpers.ts'

const home = useTempHome()
const stores = useStores()
const cwd = '/work/some project/app'
let ctx: Context | undefined

afterEach(async () => {
  await ctx?.stop()
  ctx = undefined
})

function lines(path: string): string[] {
  return readFileSync(path, 'utf8').split('\n').filter(Boolean)
}

const append = { surfaceOp: { op: 'append' as const } }

// The store contract: every test here runs against the JSONL files and against PostgreSQL; the few that look at the
// files themselves (torn tails, line numbers) run for the JSONL store only.
for (const kind of stores)
  describe.skipIf(kind.skip)(`the ${kind.name} store`, () => {
    const boot = kind.boot
    const files = kind.name === 'jsonl'
    // A test about the JSONL files themselves is defined for that store only (not reported as skipped for the other).
    const itFiles = files ? it : ((() => {}) as unknown as typeof it)

    describe('cordis events', () => {
      it('publishes every committed event after it is written; a throwing listener never breaks the append', async () => {
        ctx = await boot()
        const seen: string[] = []
        const warnings: string[] = []
        ctx.on('internal/warning', (message: unknown) => {
          warnings.push(String(message))
        })
        ctx.on('session/event', () => {
          throw new Error('listener bug')
        })
        ctx.on('session/event', (session, event) => {
          // Post-commit: the event is already in the log and stored when listeners run.
          expect(session.at(event.seq)).toBe(event)
          expect(ctx!.sessions.backscan(session.id, (stored) => stored).value).toEqual(event)
          seen.push(`${event.seq} ${event.type}`)
        })
        const session = ctx.sessions.create({ cwd })
        session.append('turn/start', { turn: 1, trigger: 'prompt' })
        session.append('turn/end', { turn: 1, reason: 'completed' })
        expect(seen).toEqual(['0 turn/start', '1 turn/end'])
        expect(session.seq).toBe(2)
        expect(warnings.filter((w) => w.includes('listener bug'))).toHaveLength(2)
      })

      it('session/validate vetoes an append: nothing is logged, written or published', async () => {
        ctx = await boot({ dev: false })
        const published: number[] = []
        ctx.on('session/event', (_, event) => {
          published.push(event.seq)
        })
        ctx.on('session/validate', (_, event) => {
          if (event.type === 'test/note' && event.data.text === 'forbidden') throw new Error('no forbidden notes')
        })
        const session = ctx.sessions.create({ cwd })
        session.append('test/note', { text: 'fine' })
        expect(() => session.append('test/note', { text: 'forbidden' })).toThrow('no forbidden notes')
        session.append('test/note', { text: 'fine again' })
        expect(session.events.map((e) => e.seq)).toEqual([0, 1])
        expect(published).toEqual([0, 1])
        expect((await kind.stored(ctx, session.id)).map((e) => (e.data as { text: string }).text)).toEqual([
          'fine',
          'fine again',
        ])
      })

      it('emits session/created and session/closed; a closed session refuses appends', async () => {
        ctx = await boot()
        const log: string[] = []
        ctx.on('session/created', (s) => {
          log.push(`created ${s.id}`)
        })
        ctx.on('session/closed', (s) => {
          log.push(`closed ${s.id}`)
        })
        const session = ctx.sessions.create({ cwd, id: 'abc' })
        expect(ctx.sessions.get('abc')).toBe(session)
        expect(ctx.sessions.liveSessions()).toEqual([session])
        ctx.sessions.close(session)
        expect(log).toEqual(['created abc', 'closed abc'])
        expect(ctx.sessions.get('abc')).toBeUndefined()
        expect(() => session.append('turn/start', { turn: 1, trigger: 'prompt' })).toThrow(/session abc is closed/)
        // Closing a stale object does not close the session reopened under the same id.
        const reopened = ctx.sessions.open('abc').session
        ctx.sessions.close(session)
        expect(ctx.sessions.get('abc')).toBe(reopened)
      })

      it('disposing the store plugin closes every live session and releases its lock', async () => {
        ctx = await boot()
        const session = ctx.sessions.create({ cwd, id: 'held' })
        const stopped = ctx
        expect(await kind.locked(stopped, 'held')).toBe(true)
        await ctx.stop()
        ctx = undefined
        expect(await kind.locked(stopped, 'held')).toBe(false)
        expect(() => session.append('turn/start', { turn: 1, trigger: 'prompt' })).toThrow(/closed/)
      })
    })

    describe('persistence', () => {
      itFiles(
        'writes $KEEL_HOME/sessions/<cwd-slug>/<id>.jsonl with a header line, one JSON line per event',
        async () => {
          ctx = await boot()
          const session = ctx.sessions.create({
            cwd,
            id: 'child-1',
            parent: { sessionId: 'parent-1', callId: 'call-9' },
          })
          appendTurn(session, 1)
          const path = join(home(), 'sessions', cwdSlug(cwd), 'child-1.jsonl')
          expect(cwdSlug(cwd)).toBe('work-some-project-app')
          expect(ctx.sessions.pathOf('child-1')).toBe(path)
          const [head, ...rest] = lines(path)
          const parsedHeader = JSON.parse(head!) as SessionHeader
          expect(parsedHeader).toEqual({
            type: 'session',
            version: 1,
            id: 'child-1',
            createdAt: expect.any(Number),
            cwd,
            parent: { sessionId: 'parent-1', callId: 'call-9' },
          })
          expect(rest.map((line) => JSON.parse(line))).toEqual(JSON.parse(JSON.stringify(session.events)))
          expect(session.header).toEqual(parsedHeader)
        },
      )

      it('keeps an in-memory session off disk', async () => {
        ctx = await boot()
        const session = ctx.sessions.create({ cwd, persist: false })
        appendTurn(session, 1)
        expect(existsSync(join(home(), 'sessions'))).toBe(false)
        expect(ctx.sessions.pathOf(session.id)).toBeUndefined()
        expect(ctx.sessions.list()).toEqual([])
      })

      it('refuses bad ids, a duplicate id and an unknown id', async () => {
        ctx = await boot()
        expect(() => ctx!.sessions.create({ cwd, id: '../escape' })).toThrow(/not a session id/)
        expect(() => ctx!.sessions.open('a/b')).toThrow(/not a session id/)
        const session = ctx.sessions.create({ cwd, id: 'dup' })
        expect(() => ctx!.sessions.create({ cwd, id: 'dup' })).toThrow(/already open/)
        ctx.sessions.close(session)
        expect(() => ctx!.sessions.create({ cwd, id: 'dup' })).toThrow(/session dup already exists/)
        expect(await kind.locked(ctx, 'dup')).toBe(false)
        expect(() => ctx!.sessions.open('missing')).toThrow(SessionNotFoundError)
      })

      it('round-trips through close and open: same events, same messages, numbering continues', async () => {
        ctx = await boot()
        const session = ctx.sessions.create({ cwd, id: 'round' })
        appendTurn(session, 1)
        appendTurn(session, 2)
        const events = JSON.parse(JSON.stringify(session.events))
        const messages = session.deriveMessages()
        ctx.sessions.close(session)

        const { session: reopened, repairs } = ctx.sessions.open('round')
        expect(repairs).toEqual([])
        expect(reopened).not.toBe(session)
        expect(reopened.events).toEqual(events)
        expect(reopened.deriveMessages()).toEqual(messages)
        expect(reopened.header).toEqual(session.header)
        appendTurn(reopened, 3) // invariants (dev plugin) accept the continued numbering
        expect(reopened.seq).toBe(33)
        expect(ctx.sessions.open('round').session).toBe(reopened) // already live: the same object
        ctx.sessions.close(reopened)
        expect(ctx.sessions.read('round').events).toHaveLength(33)
      })

      itFiles('drops a torn last line, truncates the file to the valid prefix and says so', async () => {
        ctx = await boot()
        const session = ctx.sessions.create({ cwd, id: 'torn' })
        appendTurn(session, 1)
        const path = ctx.sessions.pathOf('torn')!
        ctx.sessions.close(session)
        const valid = statSync(path).size
        appendFileSync(path, '{"type":"turn/start","seq":11,"time":1,"data":{"tu')

        const { session: reopened, repairs } = ctx.sessions.open('torn')
        expect(reopened.seq).toBe(11)
        expect(repairs).toEqual([
          `${path}: dropped a torn last line (line 13); the file now ends at the last whole event`,
        ])
        expect(statSync(path).size).toBe(valid)
        reopened.append('turn/start', { turn: 2, trigger: 'prompt' })
        expect(lines(path)).toHaveLength(13)
        expect(JSON.parse(lines(path).at(-1)!).seq).toBe(11)
      })

      itFiles('treats a whole line without its newline as torn too (it was never acknowledged)', async () => {
        ctx = await boot()
        const session = ctx.sessions.create({ cwd, id: 'nonl' })
        appendTurn(session, 1)
        const path = ctx.sessions.pathOf('nonl')!
        ctx.sessions.close(session)
        const size = statSync(path).size
        truncateSync(path, size - 1) // cut the last newline: turn/end at seq 10 is now torn
        const loaded = readSessionFile(path)
        expect(loaded.events).toHaveLength(10)
        expect(loaded.tornLine).toBe(12)
      })

      itFiles(
        'cuts at the right byte with multi-byte text, and drops a junk last line (a power cut can leave one)',
        async () => {
          ctx = await boot()
          const session = ctx.sessions.create({ cwd, id: 'utf8' })
          session.append(
            'user/message',
            { message: { role: 'user', content: [{ type: 'text', text: 'naïve café — 日本語 🚀' }] } },
            append,
          )
          const path = ctx.sessions.pathOf('utf8')!
          ctx.sessions.close(session)
          const valid = statSync(path).size
          appendFileSync(path, '{"type":"user/message","seq":1,"data":{"text":"🚀')
          appendFileSync(path, Buffer.from([0xf0, 0x9f])) // cut inside a multi-byte character
          let reopened = ctx.sessions.open('utf8')
          expect(reopened.repairs[0]).toContain('dropped a torn last line (line 3)')
          expect(statSync(path).size).toBe(valid)
          expect(reopened.session.deriveMessages()[0]!.content).toEqual([
            { type: 'text', text: 'naïve café — 日本語 🚀' },
          ])
          expect(Object.isFrozen(reopened.session.at(0)!.data)).toBe(true) // loaded events are frozen like appended ones
          ctx.sessions.close(reopened.session)
          appendFileSync(path, '\0\0\0\0\n')
          reopened = ctx.sessions.open('utf8')
          expect(reopened.repairs[0]).toContain('dropped a torn last line (line 3)')
          expect(statSync(path).size).toBe(valid)
          ctx.sessions.close(reopened.session)
        },
      )

      itFiles('refuses a bad line in the middle, naming file and line', async () => {
        ctx = await boot()
        const session = ctx.sessions.create({ cwd, id: 'bad' })
        appendTurn(session, 1)
        const path = ctx.sessions.pathOf('bad')!
        ctx.sessions.close(session)
        const text = lines(path)
        text[4] = text[4]!.slice(0, 20) // line 5 damaged, more lines follow
        writeFileSync(path, text.join('\n') + '\n')
        expect(() => ctx!.sessions.open('bad')).toThrow(SessionFileError)
        expect(() => ctx!.sessions.open('bad')).toThrow(`${path}:5: line is not JSON`)
        expect(existsSync(path + '.lock')).toBe(false) // the failed open released its lock
        expect(readFileSync(path, 'utf8')).toBe(text.join('\n') + '\n') // and changed nothing
      })

      itFiles('refuses a seq gap, naming file and line', async () => {
        ctx = await boot()
        const session = ctx.sessions.create({ cwd, id: 'gap' })
        appendTurn(session, 1)
        const path = ctx.sessions.pathOf('gap')!
        ctx.sessions.close(session)
        const text = lines(path)
        text.splice(6, 1) // drop seq 5 (line 7)
        writeFileSync(path, text.join('\n') + '\n')
        expect(() => ctx!.sessions.open('gap')).toThrow(`${path}:7: expected event seq 5, found 6`)
      })

      itFiles('refuses bad surface metadata in the file, naming file and line', async () => {
        ctx = await boot()
        const session = ctx.sessions.create({ cwd, id: 'meta' })
        appendTurn(session, 1)
        const path = ctx.sessions.pathOf('meta')!
        ctx.sessions.close(session)
        const text = lines(path)
        const event = JSON.parse(text[3]!) // seq 2, user/message
        delete event.surfaceOp
        text[3] = JSON.stringify(event)
        writeFileSync(path, text.join('\n') + '\n')
        expect(() => ctx!.sessions.open('meta')).toThrow(
          `${path}:4: seed event 2 (user/message): user/message is a surface event and needs a surfaceOp`,
        )
      })

      itFiles('refuses a damaged header, a header for another id, and a newer format', async () => {
        ctx = await boot()
        const session = ctx.sessions.create({ cwd, id: 'hdr' })
        const path = ctx.sessions.pathOf('hdr')!
        ctx.sessions.close(session)
        const original = readFileSync(path, 'utf8')
        writeFileSync(path, original.replace('"id":"hdr"', '"id":"other"'))
        expect(() => ctx!.sessions.open('hdr')).toThrow(`${path}:1: the header names session other, not hdr`)
        writeFileSync(path, original.replace('"version":1', '"version":99'))
        expect(() => ctx!.sessions.open('hdr')).toThrow(`${path}:1: written in session format 99`)
        writeFileSync(path, 'not json\n')
        expect(() => ctx!.sessions.open('hdr')).toThrow(`${path}:1: the header line is not JSON`)
        writeFileSync(path, '')
        expect(() => ctx!.sessions.open('hdr')).toThrow(`${path}:1: empty file`)
      })
    })

    describe('open-turn repair', () => {
      async function crashed(
        build: (session: Session) => void,
      ): Promise<{ events: SessionEvent[]; repairs: string[]; path: string; before: number }> {
        ctx = await boot()
        const session = ctx.sessions.create({ cwd, id: 'crashed' })
        build(session)
        const before = session.seq
        const path = ctx.sessions.pathOf('crashed')!
        ctx.sessions.close(session) // as far as the file is concerned, the same as a kill
        const { session: reopened, repairs } = ctx.sessions.open('crashed')
        const events = [...reopened.events]
        ctx.sessions.close(reopened)
        // The repair is durable: a plain read of the stored log sees it.
        const stored = await kind.stored(ctx, 'crashed')
        expect(stored).toEqual(JSON.parse(JSON.stringify(events)))
        expect(findOpenTurn(stored)).toBeUndefined()
        return { events, repairs, path, before }
      }

      const tail = (events: SessionEvent[], from: number) =>
        events.slice(from).map((e) => {
          const data = e.data as {
            callId?: string
            reason?: string
            step?: number
            content?: { text: string }[]
            isError?: boolean
          }
          return [e.type, data.step, data.callId, data.reason, data.isError].filter((x) => x !== undefined).join(' ')
        })

      it('answers a logged call and a call only in the assistant message, then closes the step and the turn', async () => {
        const { events, repairs, path, before } = await crashed((session) => {
          appendTurn(session, 1)
          session.append('turn/start', { turn: 2, trigger: 'prompt' })
          session.append('step/start', { turn: 2, step: 1 })
          session.append('user/message', { message: { role: 'user', content: [{ type: 'text', text: 'go' }] } }, append)
          session.append(
            'assistant/message',
            {
              turn: 2,
              step: 1,
              message: {
                role: 'assistant',
                content: [
                  { type: 'tool-call', id: 'a', name: 'bash', arguments: '{}' },
                  { type: 'tool-call', id: 'b', name: 'bash', arguments: '{"x":1}' },
                  { type: 'tool-call', id: 'c', name: 'read', arguments: '{}' },
                ],
              },
            },
            append,
          )
          session.append('tool/call', { turn: 2, step: 1, callId: 'a', name: 'bash', arguments: '{}' })
          session.append(
            'tool/result',
            { turn: 2, step: 1, callId: 'a', content: [{ type: 'text', text: 'ok' }], isError: false },
            append,
          )
          session.append('tool/call', { turn: 2, step: 1, callId: 'b', name: 'bash', arguments: '{"x":1}' })
          session.append('test/note', { text: 'tool b was running' })
          // crash: b logged and unanswered, c never logged
        })
        expect(tail(events, before)).toEqual([
          'tool/result 1 b true',
          'tool/call 1 c',
          'tool/result 1 c true',
          'step/end 1',
          'turn/end interrupted',
        ])
        expect(events.at(-3)!.data).toMatchObject({ content: [{ type: 'text', text: INTERRUPTED_RESULT }] })
        expect(events.at(-4)!.data).toEqual({ turn: 2, step: 1, callId: 'c', name: 'read', arguments: '{}' })
        expect(repairs).toEqual([
          `${path}: turn 2 was left open by a crash; closed it as interrupted with an error result for 2 unanswered tool calls`,
        ])
      })

      it('closes a turn with no open step and no calls with just turn/end', async () => {
        const { events, before, repairs } = await crashed((session) => {
          session.append('turn/start', { turn: 1, trigger: 'prompt' })
          session.append('step/start', { turn: 1, step: 1 })
          session.append('step/end', { turn: 1, step: 1 })
        })
        expect(tail(events, before)).toEqual(['turn/end interrupted'])
        expect(repairs[0]).toMatch(/turn 1 was left open by a crash; closed it as interrupted$/)
      })

      it('answers calls stranded outside the open step in a new step (a damaged log), keeping the invariants', async () => {
        // Written without the dev invariants: a step that ended with an unanswered call.
        ctx = await boot({ dev: false })
        const session = ctx.sessions.create({ cwd, id: 'stranded' })
        session.append('turn/start', { turn: 1, trigger: 'prompt' })
        session.append('step/start', { turn: 1, step: 1 })
        session.append(
          'assistant/message',
          {
            turn: 1,
            step: 1,
            message: { role: 'assistant', content: [{ type: 'tool-call', id: 'x', name: 'bash', arguments: '{}' }] },
          },
          append,
        )
        session.append('tool/call', { turn: 1, step: 1, callId: 'x', name: 'bash', arguments: '{}' })
        session.append('step/end', { turn: 1, step: 1 })
        ctx.sessions.close(session)
        await ctx.stop()
        ctx = await boot() // reopen with the invariants on: every repair event must pass them
        const { session: reopened } = ctx.sessions.open('stranded')
        expect(tail([...reopened.events], 5)).toEqual([
          'step/start 2',
          'tool/call 2 x',
          'tool/result 2 x true',
          'step/end 2',
          'turn/end interrupted',
        ])
      })

      it('leaves a cleanly closed log alone', async () => {
        const { events, before, repairs } = await crashed((session) => appendTurn(session, 1))
        expect(events).toHaveLength(before)
        expect(repairs).toEqual([])
      })
    })

    describe('list and read', () => {
      it('lists the sessions of a cwd newest first, with the first prompt as title', async () => {
        ctx = await boot()
        const other = '/elsewhere'
        const make = async (id: string, dir: string, prompt: string | undefined, mtime: number) => {
          const session = ctx!.sessions.create({ cwd: dir, id })
          if (prompt !== undefined) {
            session.append(
              'user/message',
              { message: { role: 'user', source: 'context', content: [{ type: 'text', text: 'AGENTS.md says…' }] } },
              append,
            )
            session.append(
              'user/message',
              { message: { role: 'user', content: [{ type: 'text', text: prompt }] } },
              append,
            )
          }
          ctx!.sessions.close(session)
          await kind.touch(ctx!, id, mtime)
        }
        await make('old', cwd, 'first   task\nwith lines', 1_000_000)
        await make('new', cwd, 'second task', 3_000_000)
        await make('mid', cwd, undefined, 2_000_000)
        await make('away', other, 'elsewhere', 4_000_000)

        const listed = ctx.sessions.list(cwd)
        expect(listed.map((s) => [s.id, s.title])).toEqual([
          ['new', 'second task'],
          ['mid', ''],
          ['old', 'first task with lines'],
        ])
        expect(listed[0]).toMatchObject({ cwd, updatedAt: 3_000_000_000, path: ctx.sessions.pathOf('new') })
        expect(ctx.sessions.list().map((s) => s.id)).toEqual(['away', 'new', 'mid', 'old'])
        expect(ctx.sessions.list('/nowhere')).toEqual([])
        if (files) expect(readdirSync(join(home(), 'sessions')).sort()).toEqual(['elsewhere', cwdSlug(cwd)].sort())
      })

      it('finds the title past the first few KB, and across a prompt cut by the peek', async () => {
        ctx = await boot()
        const make = (id: string, before: number) => {
          const session = ctx!.sessions.create({ cwd, id })
          const context = 'x'.repeat(before)
          session.append(
            'user/message',
            { message: { role: 'user', source: 'context', content: [{ type: 'text', text: context }] } },
            append,
          )
          session.append(
            'user/message',
            { message: { role: 'user', content: [{ type: 'text', text: `title ${id}` }] } },
            append,
          )
          ctx!.sessions.close(session)
        }
        make('far', 20_000) // the prompt starts past 8 KB
        make('cut', 8_000) // the prompt's line straddles 8 KB
        expect(Object.fromEntries(ctx.sessions.list(cwd).map((s) => [s.id, s.title]))).toEqual({
          far: 'title far',
          cut: 'title cut',
        })
      })

      it('reads a session without locking or repairing it', async () => {
        ctx = await boot()
        const session = ctx.sessions.create({ cwd, id: 'peek' })
        session.append('turn/start', { turn: 1, trigger: 'prompt' })
        const path = ctx.sessions.pathOf('peek')!
        expect(ctx.sessions.read('peek').events).toHaveLength(1) // live: from memory
        ctx.sessions.close(session)
        const read = ctx.sessions.read('peek')
        expect(read.path).toBe(path)
        expect(read.events).toHaveLength(1) // the open turn is not closed by a read
        expect(await kind.locked(ctx, 'peek')).toBe(false)
      })
    })

    describe('single writer (in process)', () => {
      it('refuses a second writer with a one-line error naming the pid, and takes over a stale lock', async () => {
        ctx = await boot()
        const session = ctx.sessions.create({ cwd, id: 'locked' })
        const path = ctx.sessions.pathOf('locked')!
        if (files) expect(readLock(path + '.lock')?.pid).toBe(process.pid)
        // A second store (another cordis app in this process) must not write the same session.
        const second = await boot()
        try {
          let error: Error | undefined
          try {
            second.sessions.open('locked')
          } catch (caught) {
            error = caught as Error
          }
          expect(error).toBeInstanceOf(SessionLockedError)
          expect(error!.message).toBe(
            files
              ? `session is open in another process (pid ${process.pid}, since ${lockSince(path)}); lock file ${path}.lock`
              : `session locked is open on ${hostName()} (pid ${process.pid}, since ${(error as SessionLockedError).holder.since && new Date((error as SessionLockedError).holder.since!).toISOString().replace('T', ' ').slice(0, 19)} UTC); its lock is held in ${path}`,
          )
          expect(error!.message).not.toContain('\n')
          ctx.sessions.close(session)
          if (!files) {
            // Closing the holder releases the lock: the second store opens it now.
            second.sessions.close(second.sessions.open('locked').session)
            return
          }
          // A lock left by a dead process is stale.
          writeFileSync(path + '.lock', '999999999')
          const { session: taken } = second.sessions.open('locked')
          expect(readLock(path + '.lock')?.pid).toBe(process.pid)
          second.sessions.close(taken)
          expect(existsSync(path + '.lock')).toBe(false)
          // An empty or garbled lock (its writer died mid-write) is stale too.
          writeFileSync(path + '.lock', '')
          second.sessions.close(second.sessions.open('locked').session)
        } finally {
          await second.stop()
        }
      })
    })
  })
