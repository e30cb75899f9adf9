import { readFileSync } from 'node:fs'
import { readdir, readFile } from 'node:fs/promises'

/**
 * How long a stdio server has, once its stdin is closed, to exit on its own (a well-behaved server exits at EOF
 * within milliseconds), and then to handle SIGTERM before SIGKILL. The SDK's own close waits 2 s for each step, which
 * every `keel -p` run paid at exit with a server that ignores EOF (server-everything does).
 */
export const STOP_TIMING = { exitMs: 100, termMs: 1000 }

/**
 * Ends a stdio server whose stdin the SDK is closing: `closed` is the SDK's close, which resolves once the process and
 * its pipes are gone. A server still there after `exitMs` gets SIGTERM, and SIGKILL after `termMs` more; each signal
 * also goes to the server's descendants, found before it is sent (a wrapper such as `npx` or `sh -c` that dies first
 * would otherwise leave the real server running, orphaned, holding the pipes open). Resolves when `closed` does,
 * which the SDK bounds.
 */
export async function stopServer(pid: number, closed: Promise<unknown>, timing = STOP_TIMING): Promise<void> {
  let done = false
  const finished = closed.then(() => {
    done = true
  })
  // Kept across both signals: a descendant whose parent SIGTERM ended is no longer found below the server.
  const targets = new Set([pid])
  for (const [signal, wait] of [
    ['SIGTERM', timing.exitMs],
    ['SIGKILL', timing.termMs],
  ] as const) {
    await Promise.race([finished, delay(wait)])
    if (done) return
    for (const found of await descendants(pid)) targets.add(found)
    for (const target of targets) signalQuietly(target, signal)
  }
  await finished
  // The pipes close as a killed process releases its files, a moment before it has exited: wait for that moment too,
  // so that a close that resolved means the processes are gone (bounded: a SIGKILLed process cannot hold out).
  for (let tries = 0; tries < 100 && [...targets].some(running); tries++) await delay(5)
}

/** Whether `pid` has not exited yet (a zombie has: it only waits for its parent to reap it). */
function running(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    return stat[stat.lastIndexOf(')') + 2] !== 'Z'
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return false
  }
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms).unref())
}

function signalQuietly(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(pid, signal)
  } catch {
    // Gone already (ESRCH), which is the point.
  }
}

/**
 * The processes below `pid`, from /proc (Linux); none elsewhere, where only the server itself is signalled. Read only
 * for a server that did not exit on its own, so the cost (one small read per process) is not on the usual path.
 */
async function descendants(pid: number): Promise<number[]> {
  const names = await readdir('/proc').catch(() => [] as string[])
  const children = new Map<number, number[]>()
  await Promise.all(
    names
      .filter((name) => /^\d+$/.test(name))
      .map(async (name) => {
        const stat = await readFile(`/proc/${name}/stat`, 'utf8').catch(() => '')
        // `pid (comm) state ppid …`; comm may hold spaces and parentheses, so read after the last ')'.
        const parent = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1])
        if (!Number.isInteger(parent)) return
        const list = children.get(parent)
        if (list) list.push(Number(name))
        else children.set(parent, [Number(name)])
      }),
  )
  const found: number[] = []
  const queue = [pid]
  while (queue.length) {
    for (const child of children.get(queue.shift()!) ?? []) {
      found.push(child)
      queue.push(child)
    }
  }
  return found
}
