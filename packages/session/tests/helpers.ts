// Shared test scaffolding for @keel/session: a throwaway KEEL_HOME per test and a booted cordis context.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Context } from 'cordis'
import { afterEach, beforeEach } from 'vitest'
import * as sessionPlugin from '@keel/session'
import * as devPlugin from '@keel/session/dev'
import { readLock, type Session, type SessionHeader } from '@keel/session'

/** Points KEEL_HOME at a fresh temp dir before each test and removes it after. Returns a getter for the dir. */
export function useTempHome(): () => string {
  let home = ''
  const previous = process.env.KEEL_HOME
  beforeEach(() => {
    home = mkdtempSync(join(tmpdir(), 'keel-session-test-'))
    process.env.KEEL_HOME = home
  })
  afterEach(() => {
    if (previous === undefined) delete process.env.KEEL_HOME
    else process.env.KEEL_HOME = previous
    rmSync(home, { recursive: true, force: true })
  })
  return () => home
}

/** A started root context with `@keel/session` and, unless `dev: false`, the dev-mode invariants. */
export async function boot(options: { dev?: boolean } = {}): Promise<Context> {
  const ctx = new Context()
  // Keep cordis from printing expected listener failures; tests that care listen themselves.
  ctx.on('internal/warning', () => {})
  ctx.plugin(sessionPlugin)
  if (options.dev !== false) ctx.plugin(devPlugin)
  await ctx.start()
  return ctx
}

export function header(id = 'test-session'): SessionHeader {
  return { type: 'session', version: 1, id, createdAt: 0, cwd: '/tmp/project' }
}

/** Appends one well-formed turn: a prompt, an answer with one tool call, its result, and a final answer. */
export function appendTurn(session: Session, turn: number, options: { prompt?: string; callId?: string } = {}): void {
  const callId = options.callId ?? `call-${turn}`
  session.append('turn/start', { turn, trigger: 'prompt' })
  session.append('step/start', { turn, step: 1 })
  session.append(
    'user/message',
    { message: { role: 'user', content: [{ type: 'text', text: options.prompt ?? `prompt ${turn}` }] } },
    { surfaceOp: { op: 'append' } },
  )
  session.append(
    'assistant/message',
    {
      turn,
      step: 1,
      message: {
        role: 'assistant',
        content: [{ type: 'tool-call', id: callId, name: 'bash', arguments: '{"command":"ls"}' }],
      },
    },
    { surfaceOp: { op: 'append' } },
  )
  session.append('tool/call', { turn, step: 1, callId, name: 'bash', arguments: '{"command":"ls"}' })
  session.append(
    'tool/result',
    { turn, step: 1, callId, content: [{ type: 'text', text: 'a\nb' }], isError: false },
    { surfaceOp: { op: 'append' } },
  )
  session.append('step/end', { turn, step: 1 })
  session.append('step/start', { turn, step: 2 })
  session.append(
    'assistant/message',
    { turn, step: 2, message: { role: 'assistant', content: [{ type: 'text', text: `done ${turn}` }] } },
    { surfaceOp: { op: 'append' } },
  )
  session.append('step/end', { turn, step: 2 })
  session.append('turn/end', { turn, reason: 'completed' })
}

// A test-only extension event, merged the way packages add theirs (`todo/write` in @keel/todo).
declare module '@keel/session' {
  interface SessionEventMap {
    'test/note': { text: string }
  }
}

/** How a lock's "since" appears in SessionLockedError: `2026-11-30 20:15:03 UTC`, read from the lock of `path`. */
export function lockSince(path: string): string {
  return new Date(readLock(path + '.lock')!.since!).toISOString().replace('T', ' ').slice(0, 19) + ' UTC'
}
