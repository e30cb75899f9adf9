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
  /** When the shell was spawned (`Date.now()`): how far pids can have moved on since, see {@link candidates}. */
  spawnedAt: number
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

/**
 * A generous bound on how fast a machine hands out pids (100,000 forks a second): a call shorter than
 * `pid_max / PIDS_PER_MS` cannot have seen the pids lap.
 */
const PIDS_PER_MS = 100

let pidMax: number | undefined
function readNumber(file: string): number | undefined {
  try {
    const value = Number(readFileSync(file, 'utf8').trim())
    return Number.isSafeInteger(value) ? value : undefined
  } catch {
    return undefined
  }
}

/**
 * Which /proc entries can hold a process of the call. Everything of it was forked after its shell, and Linux hands
 * out pids in rising order until they wrap at `pid_max`, so only pids at or above the shell's can be the call's:
 * reading the environment of every process on the machine took 125 ms with 500 running, ten times a short command.
 * When the pids may have wrapped since the shell started (the last pid handed out is below the shell's, or the call
 * lasted long enough for a whole lap) every process is read, as before.
 */
function candidates(names: string[], mark: CallMark): number[] {
  const all = names.filter((name) => /^\d+$/.test(name)).map(Number)
  const last = lastPid(mark)
  return (last === undefined ? all : all.filter((pid) => pid >= mark.pgid)).filter((pid) => pid !== process.pid)
}

/** The last pid handed out, when every pid of the call lies between the shell's and it (no lap); else undefined. */
function lastPid(mark: CallMark): number | undefined {
  pidMax ??= readNumber(`${PROC}/sys/kernel/pid_max`) ?? 0
  const last = readNumber(`${PROC}/sys/kernel/ns_last_pid`)
  const lapped = last === undefined || last < mark.pgid || (Date.now() - mark.spawnedAt) * PIDS_PER_MS >= pidMax
  return lapped ? undefined : last
}

/**
 * How few pids handed out since the shell make reading each of them directly cheaper than listing /proc (a listing
 * of 500 entries and a thread-pool round trip per file, about 1–3 ms on a loaded machine, against a few µs a pid).
 */
const DIRECT_RANGE = 256

/**
 * The marked processes among the pids handed out since the shell, read synchronously, or undefined when there are
 * too many of them (or they may have lapped). A pid read directly may be a thread's (/proc lists only processes but
 * answers for threads too): a marked one counts only if it leads its thread group. Those whose environment reads
 * empty go to `recheck` (caught mid-exec, see {@link worthRereading}).
 */
function markedInRange(mark: CallMark, needle: Buffer, recheck: number[]): number[] | undefined {
  const last = lastPid(mark)
  if (last === undefined || last - mark.pgid > DIRECT_RANGE) return undefined
  const out: number[] = []
  for (let pid = mark.pgid; pid <= last; pid++) {
    if (pid === process.pid) continue
    let environ: Buffer
    try {
      environ = readFileSync(`${PROC}/${pid}/environ`)
    } catch {
      continue
    }
    if (carries(environ, needle)) {
      if (leadsThreadGroup(pid)) out.push(pid)
    } else if (!environ.length) {
      try {
        if (worthRereading(readFileSync(`${PROC}/${pid}/stat`, 'utf8'))) recheck.push(pid)
      } catch {}
    }
  }
  return out
}

function leadsThreadGroup(pid: number): boolean {
  try {
    return /^Tgid:\s*(\d+)$/m.exec(readFileSync(`${PROC}/${pid}/status`, 'utf8'))?.[1] === String(pid)
  } catch {
    return false
  }
}

/** Live processes carrying the marker (a zombie's environment reads empty, so the dead are never listed). */
async function markedPids(mark: CallMark): Promise<number[]> {
  const needle = needleOf(mark.variable)
  const recheck: number[] = []
  const direct = markedInRange(mark, needle, recheck)
  if (direct) {
    if (!recheck.length) return direct
    const found = (await Promise.all(recheck.map(check))).filter((pid) => pid > 0 && leadsThreadGroup(pid))
    return [...direct, ...found]
  }
  let names: string[]
  try {
    names = await readdir(PROC)
  } catch {
    return []
  }
  return (await Promise.all(candidates(names, mark).map(check))).filter((pid) => pid > 0)

  async function check(name: number): Promise<number> {
    for (let attempt = 0; ; attempt++) {
      let environ: Buffer
      try {
        environ = await readFile(`${PROC}/${name}/environ`)
      } catch {
        return 0
      }
      if (carries(environ, needle)) return name
      if (environ.length || attempt === RETRIES) return 0
      try {
        if (!worthRereading(await readFile(`${PROC}/${name}/stat`, 'utf8'))) return 0
      } catch {
        return 0
      }
      await new Promise((done) => setTimeout(done, RETRY_MS))
    }
  }
}

/** The same scan, synchronous, for the process `exit` hook where nothing asynchronous runs. */
function markedPidsSync(mark: CallMark): number[] {
  let names: string[]
  try {
    names = readdirSync(PROC)
  } catch {
    return []
  }
  const needle = needleOf(mark.variable)
  const out: number[] = []
  for (const name of candidates(names, mark)) {
    for (let attempt = 0; ; attempt++) {
      let environ: Buffer
      try {
        environ = readFileSync(`${PROC}/${name}/environ`)
      } catch {
        break
      }
      if (carries(environ, needle)) {
        out.push(name)
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
    const pids = await markedPids(mark)
    killAll(mark, pids)
    if (!pids.length) break
    for (const pid of pids) killed.add(pid)
  }
  return killed.size || (groupWasAlive ? 'some' : 0)
}

function killCallSync(mark: CallMark): void {
  for (let round = 0; round < 10; round++) {
    const pids = markedPidsSync(mark)
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
