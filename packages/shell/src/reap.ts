import { randomUUID } from 'node:crypto'
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { readdir, readFile } from 'node:fs/promises'

/**
 * Finding and killing everything one `bash` call started. The call's shell leads a process group of its own, which
 * catches `cmd &`, `nohup` and `disown`; a process that left the group (`setsid`, a daemonizing double fork) is
 * found by an environment variable unique to the call, which every descendant inherits unless it clears its
 * environment. The marker is found through /proc, so that second net exists on Linux only. A process that both left
 * the group and cleared its environment is not found; if it holds the output pipes, the call stops reading them.
 */
export interface CallMark {
  /** The process group: the shell's pid. */
  pgid: number
  /** `KEEL_BASH_CALL_<hex>`, set to `1` in the shell's environment. A name per call, so nested Keels keep both. */
  variable: string
}

export function newMarkerVariable(): string {
  return `KEEL_BASH_CALL_${randomUUID().replaceAll('-', '')}`
}

const PROC = '/proc'

function carries(environ: Buffer, needle: Buffer): boolean {
  let at = environ.indexOf(needle)
  while (at !== -1) {
    if (at === 0 || environ[at - 1] === 0) return true
    at = environ.indexOf(needle, at + 1)
  }
  return false
}

const needleOf = (variable: string) => Buffer.from(`${variable}=1\0`)

/**
 * A process that is replacing its program (execve) shows an empty environment for a moment; one that is not a
 * zombie or a kernel thread is read again shortly, so a scan never misses a process caught mid-exec.
 */
function worthRereading(stat: string): boolean {
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
  const state = fields[0]
  const flags = Number(fields[6])
  const KERNEL_THREAD = 0x00200000
  return state !== 'Z' && state !== 'X' && !(flags & KERNEL_THREAD)
}

const RETRIES = 5
const RETRY_MS = 2

/** Live processes carrying the marker (a zombie's environment reads empty, so the dead are never listed). */
async function markedPids(variable: string): Promise<number[]> {
  let names: string[]
  try {
    names = await readdir(PROC)
  } catch {
    return []
  }
  const needle = needleOf(variable)
  const check = async (name: string): Promise<number> => {
    if (!/^\d+$/.test(name) || Number(name) === process.pid) return 0
    for (let attempt = 0; ; attempt++) {
      let environ: Buffer
      try {
        environ = await readFile(`${PROC}/${name}/environ`)
      } catch {
        return 0
      }
      if (carries(environ, needle)) return Number(name)
      if (environ.length || attempt === RETRIES) return 0
      try {
        if (!worthRereading(await readFile(`${PROC}/${name}/stat`, 'utf8'))) return 0
      } catch {
        return 0
      }
      await new Promise((done) => setTimeout(done, RETRY_MS))
    }
  }
  return (await Promise.all(names.map(check))).filter((pid) => pid > 0)
}

/** The same scan, synchronous, for the process `exit` hook where nothing asynchronous runs. */
function markedPidsSync(variable: string): number[] {
  let names: string[]
  try {
    names = readdirSync(PROC)
  } catch {
    return []
  }
  const needle = needleOf(variable)
  const out: number[] = []
  for (const name of names) {
    if (!/^\d+$/.test(name) || Number(name) === process.pid) continue
    for (let attempt = 0; ; attempt++) {
      let environ: Buffer
      try {
        environ = readFileSync(`${PROC}/${name}/environ`)
      } catch {
        break
      }
      if (carries(environ, needle)) {
        out.push(Number(name))
        break
      }
      if (environ.length || attempt === RETRIES) break
      try {
        if (!worthRereading(readFileSync(`${PROC}/${name}/stat`, 'utf8'))) break
      } catch {
        break
      }
    }
  }
  return out
}

function groupAlive(pgid: number): boolean {
  try {
    process.kill(-pgid, 0)
    return true
  } catch {
    return false
  }
}

function killAll(mark: CallMark, pids: number[]): void {
  try {
    process.kill(-mark.pgid, 'SIGKILL')
  } catch {}
  for (const pid of pids)
    try {
      process.kill(pid, 'SIGKILL')
    } catch {}
}

/**
 * Kills the call's process group and every marked process, scanning again until none is left (a process may fork
 * between a scan and its kill). Returns how many processes it killed, or `'some'` when only the group showed that
 * something was left (no /proc).
 */
export async function killCall(mark: CallMark): Promise<number | 'some'> {
  const killed = new Set<number>()
  // Without /proc (macOS) the group is all there is to look at; with it, the marker is exact (a zombie of the
  // group waiting for init would make the group look alive).
  const groupWasAlive = !existsSync(PROC) && groupAlive(mark.pgid)
  for (let round = 0; round < 10; round++) {
    const pids = await markedPids(mark.variable)
    killAll(mark, pids)
    if (!pids.length) break
    for (const pid of pids) killed.add(pid)
  }
  return killed.size || (groupWasAlive ? 'some' : 0)
}

function killCallSync(mark: CallMark): void {
  for (let round = 0; round < 10; round++) {
    const pids = markedPidsSync(mark.variable)
    killAll(mark, pids)
    if (!pids.length) break
  }
}

/**
 * Calls still running, so that any way out of the process (`process.exit`, an uncaught error, a signal handler that
 * exits) kills them too: the shells lead their own sessions and would otherwise outlive Keel.
 */
const running = new Set<CallMark>()
let hooked = false

export function track(mark: CallMark): () => void {
  if (!hooked) {
    hooked = true
    process.on('exit', () => {
      for (const each of running) killCallSync(each)
    })
  }
  running.add(mark)
  return () => running.delete(mark)
}
