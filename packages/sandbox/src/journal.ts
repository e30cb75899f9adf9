// What a Keel process leaves on the host while the sandbox runs, written down under $KEEL_HOME as `<dir>/<pid>.json`
// so that the next process can clean up after one killed by a signal it cannot handle (SIGKILL, the OOM killer).
// A live process's journal is never touched.
import { constants } from 'node:fs'
import { open, readdir, unlink } from 'node:fs/promises'
import { join } from 'node:path'

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM'
  }
}

/**
 * The journals in `dir` of processes that are gone, read (undefined where a file cannot be parsed), and a function
 * that removes them (their `.tmp` halves too) once what they name has been dealt with.
 */
/** Far more than a journal holds; anything bigger is not one. */
const JOURNAL_LIMIT = 1024 * 1024

/**
 * A journal's text, or undefined unless it is a regular file under JOURNAL_LIMIT: opened without following a link
 * and without blocking, so a FIFO put in its place cannot hold the sweep (and the sandbox's start) forever.
 */
async function readSmall(path: string): Promise<string | undefined> {
  const file = await open(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK)
  try {
    const stats = await file.stat()
    return stats.isFile() && stats.size <= JOURNAL_LIMIT ? await file.readFile('utf8') : undefined
  } finally {
    await file.close()
  }
}

export async function deadJournals(dir: string): Promise<{ records: unknown[]; remove(): Promise<void> }> {
  const names = await readdir(dir).catch(() => [] as string[])
  const dead = names.filter((name) => {
    const pid = Number(/^(\d+)\.(?:json|tmp)$/.exec(name)?.[1])
    return pid > 0 && pid !== process.pid && !alive(pid)
  })
  const records: unknown[] = []
  for (const name of dead.filter((name) => name.endsWith('.json'))) {
    try {
      records.push(JSON.parse((await readSmall(join(dir, name))) ?? ''))
    } catch {
      records.push(undefined)
    }
  }
  return {
    records,
    async remove() {
      for (const name of dead) await unlink(join(dir, name)).catch(() => {})
    },
  }
}
