// The writer lock against dead holders: a zombie, a reused pid, an earlier boot, a draft left by a killed writer.
import { spawn, type ChildProcess } from 'node:child_process'
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { dirname } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterEach, describe, expect, it } from 'vitest'
import type { Context } from 'cordis'
import { holderAlive, readLock, SessionLockedError, sessionPath } from '@keel/session'
import { boot, lockSince, useTempHome } from './helpers.ts'

useTempHome()
const cwd = '/tmp/keel-lock-project'
const writer = fileURLToPath(new URL('./fixtures/writer.ts', import.meta.url))
const root = fileURLToPath(new URL('../../..', import.meta.url))
let ctx: Context | undefined
const groups: ChildProcess[] = []
afterEach(async () => {
  for (const group of groups.splice(0))
    try {
      process.kill(-group.pid!, 'SIGKILL')
    } catch {}
  await ctx?.stop()
  ctx = undefined
})

function procState(pid: number): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[0]
  } catch {
    return undefined
  }
}

async function until(condition: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 2000; i++) {
    if (condition()) return
    await new Promise((resolve) => setTimeout(resolve, 5))
  }
  throw new Error(`timed out waiting for ${what}`)
}

/**
 * A holder whose parent never reaps it: bash starts the writer in the background and then becomes `sleep` (exec),
 * which never calls wait(). Killed, the writer stays a zombie, as under a container init that reaps late.
 */
function holderWithoutReaper(id: string): Promise<{ pid: number; group: ChildProcess }> {
  const group = spawn(
    'bash',
    ['-c', `"${process.execPath}" --import tsx "${writer}" hold ${id} ${cwd} & exec sleep 600`],
    {
      cwd: root,
      env: { ...process.env },
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    },
  )
  groups.push(group)
  let stderr = ''
  group.stderr!.on('data', (chunk) => {
    stderr += chunk
  })
  return new Promise((resolve, reject) => {
    let out = ''
    group.stdout!.setEncoding('utf8').on('data', (chunk: string) => {
      out += chunk
      const match = /held (\d+)\n/.exec(out)
      if (match) resolve({ pid: Number(match[1]), group })
    })
    group.on('exit', () => reject(new Error(`holder exited early: ${stderr}`)))
  })
}

describe('dead holders', () => {
  it('a holder killed with SIGKILL and not yet reaped (a zombie) does not block a resume started right away', async () => {
    ctx = await boot()
    ctx.sessions.close(ctx.sessions.create({ cwd, id: 'zombie' }))
    const path = sessionPath(cwd, 'zombie')
    const { pid } = await holderWithoutReaper('zombie')
    expect(readLock(path + '.lock')).toMatchObject({ pid })
    // While it runs, it holds the session: one line naming the pid and since when.
    let error: Error | undefined
    try {
      ctx.sessions.open('zombie')
    } catch (caught) {
      error = caught as Error
    }
    expect(error).toBeInstanceOf(SessionLockedError)
    expect(error!.message).toBe(
      `session is open in another process (pid ${pid}, since ${lockSince(path)}); lock file ${path}.lock`,
    )

    process.kill(pid, 'SIGKILL')
    await until(() => procState(pid) === 'Z', 'the holder to become a zombie')
    expect(() => process.kill(pid, 0)).not.toThrow() // what fooled the pid-only check
    const { session } = ctx.sessions.open('zombie') // the supervisor's immediate restart
    expect(readLock(path + '.lock')?.pid).toBe(process.pid)
    expect(procState(pid)).toBe('Z') // still unreaped: the open did not wait for it
    ctx.sessions.close(session)
    expect(readdirSync(dirname(path)).filter((name) => name.endsWith('.tmp'))).toEqual([])
  }, 30_000)

  it('a lock naming a live but unrelated process (pid reused, or from an earlier boot) is stale; the right start time holds', async () => {
    ctx = await boot()
    ctx.sessions.close(ctx.sessions.create({ cwd, id: 'reused' }))
    const path = sessionPath(cwd, 'reused')
    const own = readLock // the start time and boot id this process records
    const session = ctx.sessions.open('reused').session
    const mine = own(path + '.lock')!
    ctx.sessions.close(session)
    expect(mine.startTime).toMatch(/^\d+$/)
    expect(mine.bootId).toMatch(/^[0-9a-f-]{36}$/)

    const parent = process.ppid // alive, and not the process that took the lock
    const parentStart = readFileSync(`/proc/${parent}/stat`, 'utf8')
    const startTime = parentStart.slice(parentStart.lastIndexOf(')') + 2).split(' ')[19]!
    const live = { pid: parent, startTime, bootId: mine.bootId, since: 1_700_000_000_000 }
    expect(holderAlive(live)).toBe(true)
    writeFileSync(path + '.lock', JSON.stringify(live))
    expect(() => ctx!.sessions.open('reused')).toThrow(
      `session is open in another process (pid ${parent}, since 2023-11-14 22:13:20 UTC); lock file ${path}.lock`,
    )

    for (const stale of [
      { ...live, startTime: String(Number(startTime) + 1) },
      { ...live, bootId: '00000000-0000-0000-0000-000000000000' },
    ]) {
      expect(holderAlive(stale)).toBe(false)
      writeFileSync(path + '.lock', JSON.stringify(stale))
      const { session: taken } = ctx.sessions.open('reused')
      expect(readLock(path + '.lock')?.pid).toBe(process.pid)
      ctx.sessions.close(taken)
    }
    // A lock from before start times were recorded (a bare pid) still names a live holder.
    writeFileSync(path + '.lock', String(parent))
    expect(() => ctx!.sessions.open('reused')).toThrow(`(pid ${parent}); lock file`)
  })

  it('a draft left by a writer killed while taking the lock is swept; a failed take leaves none', async () => {
    ctx = await boot()
    ctx.sessions.close(ctx.sessions.create({ cwd, id: 'drafts' }))
    const path = sessionPath(cwd, 'drafts')
    writeFileSync(`${path}.lock.999999999.3.tmp`, '999999999')
    writeFileSync(path + '.lock', JSON.stringify({ pid: process.ppid }))
    expect(() => ctx!.sessions.open('drafts')).toThrow(SessionLockedError)
    expect(readdirSync(dirname(path)).filter((name) => name.endsWith('.tmp'))).toEqual([])
    writeFileSync(path + '.lock', '')
    ctx.sessions.close(ctx.sessions.open('drafts').session)
    expect(existsSync(path + '.lock')).toBe(false)
  })
})
