// The runtime's host bridges (two `socat UNIX-LISTEN:<tmp>/claude-{http,socks}-<id>.sock,fork …` processes that relay
// the sandbox's proxy sockets to its proxy in this process) are children of this process that only its exit handlers
// stop: a Keel killed by SIGKILL leaves them running, orphaned, for good. So once the runtime has started, each
// process writes its bridges (pid and start time, which a reused pid does not share) to a journal of its own under
// $KEEL_HOME, and the next process to start the runtime stops those of dead processes that still run the same line.
import { mkdir, readdir, readFile, readlink, realpath, rename, unlink, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { keelHome } from '@keel/session/paths'
import { deadJournals } from './journal.ts'

interface Bridge {
  pid: number
  /** /proc/<pid>/stat's start time, in clock ticks since boot. */
  start: string
}

function journalDir(): string {
  return join(keelHome(), 'sandbox-bridges')
}

/** A bridge's command line: socat listening on one of the runtime's sockets. */
const BRIDGE = /^UNIX-LISTEN:.*\/claude-(?:http|socks)-[0-9a-f]+\.sock,/

/** What /proc says of `pid`: its parent, start time and command line; undefined once it is gone. */
async function processOf(pid: number): Promise<{ parent: number; start: string; argv: string[] } | undefined> {
  try {
    const [stat, cmdline] = await Promise.all([
      readFile(`/proc/${pid}/stat`, 'utf8'),
      readFile(`/proc/${pid}/cmdline`, 'utf8'),
    ])
    // `pid (comm) state ppid … starttime(22nd)`; comm may hold spaces and parentheses, so read after the last ')'.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    return { parent: Number(fields[1]), start: fields[19]!, argv: cmdline.split('\0') }
  } catch {
    return undefined
  }
}

const isBridge = (argv: string[]) => argv.some((word) => BRIDGE.test(word))

/**
 * The children of `pid`: from its threads' `children` lists (a read per thread, where reading every process's stat
 * costs two reads per process running), else every process whose parent it is.
 */
async function childrenOf(pid: number): Promise<number[]> {
  const tasks = await readdir(`/proc/${pid}/task`).catch(() => [] as string[])
  const lists = await Promise.all(
    tasks.map((task) => readFile(`/proc/${pid}/task/${task}/children`, 'utf8').catch(() => undefined)),
  )
  if (lists.some((list) => list !== undefined))
    return lists.flatMap((list) => (list ?? '').split(' ').filter(Boolean).map(Number))
  return (await readdir('/proc')).filter((name) => /^\d+$/.test(name)).map(Number)
}

/** Writes this process's bridges down (Linux); call once the runtime has started. Never fails. */
export async function recordBridges(): Promise<void> {
  if (process.platform !== 'linux') return
  try {
    const found: Bridge[] = []
    await Promise.all(
      (await childrenOf(process.pid)).map(async (pid) => {
        const info = await processOf(pid)
        if (info?.parent === process.pid && isBridge(info.argv)) found.push({ pid, start: info.start })
      }),
    )
    if (!found.length) return
    const dir = journalDir()
    await mkdir(dir, { recursive: true, mode: 0o700 })
    const partial = join(dir, `${process.pid}.tmp`)
    await writeFile(partial, JSON.stringify({ bridges: found }))
    await rename(partial, join(dir, `${process.pid}.json`))
  } catch {
    // A journal that cannot be written costs only the clean-up after a crash.
  }
}

/** Removes this process's journal: its bridges were stopped by the runtime's reset. */
export async function forgetBridges(): Promise<void> {
  await unlink(join(journalDir(), `${process.pid}.json`)).catch(() => {})
}

/** Whether `pid` runs the program this process runs (Node, for Keel). */
async function sameProgram(pid: number): Promise<boolean> {
  try {
    const [theirs, ours] = await Promise.all([readlink(`/proc/${pid}/exe`), realpath(process.execPath)])
    return theirs === ours
  } catch {
    return false
  }
}

let swept: Promise<void> | undefined

/**
 * Stops the bridges dead Keel processes recorded that still run with the same start time and a bridge's line. Once
 * per process, before its runtime starts; never fails.
 */
export function sweepBridges(dir = journalDir()): Promise<void> {
  if (dir !== journalDir()) return sweep(dir)
  swept ??= sweep(dir)
  return swept
}

async function sweep(dir: string): Promise<void> {
  try {
    const dead = await deadJournals(dir)
    for (const record of dead.records) {
      const bridges = (record as { bridges?: unknown } | undefined)?.bridges
      if (!Array.isArray(bridges)) continue
      for (const bridge of bridges as Partial<Bridge>[]) {
        if (!Number.isInteger(bridge.pid) || typeof bridge.start !== 'string') continue
        const info = await processOf(bridge.pid!)
        if (info?.start !== bridge.start || !isBridge(info.argv)) continue
        // An orphan's parent is whatever reaps orphans here; a bridge whose parent runs this program belongs to a
        // live Keel (a journal in $KEEL_HOME can name any pid: it is a hint, never an order to stop another's).
        if (await sameProgram(info.parent)) continue
        try {
          process.kill(bridge.pid!, 'SIGTERM')
        } catch {}
      }
    }
    await dead.remove()
  } catch {}
}
