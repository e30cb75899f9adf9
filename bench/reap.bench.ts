// The leftover scan after every bash call (packages/shell/src/reap.ts) with 400 extra processes running, against the
// scan of every process's /proc/N/environ it replaced (the same code, made to believe the pids may have wrapped).
import { spawn } from 'node:child_process'
import { readdirSync } from 'node:fs'
import { killCall, newMarkerVariable } from '../packages/shell/src/reap.ts'
import { median, ms, ratio, row } from './stats.ts'

const EXTRA = 400
const RUNS = 15
const sleepers = Array.from({ length: EXTRA }, () => spawn('sleep', ['120'], { stdio: 'ignore' }))
const shell = () =>
  new Promise<{ pid: number; at: number }>((done) => {
    const at = Date.now()
    const child = spawn('true', { stdio: 'ignore' })
    child.on('exit', () => done({ pid: child.pid!, at }))
  })
try {
  await new Promise((done) => setTimeout(done, 300))
  const processes = readdirSync('/proc').filter((name) => /^\d+$/.test(name)).length
  const floor: number[] = []
  const every: number[] = []
  for (let i = 0; i < RUNS; i++) {
    const { pid, at } = await shell()
    let started = performance.now()
    await killCall({ pgid: pid, variable: newMarkerVariable(), spawnedAt: at })
    floor.push(performance.now() - started)
    started = performance.now()
    await killCall({ pgid: pid, variable: newMarkerVariable(), spawnedAt: 0 })
    every.push(performance.now() - started)
  }
  row(`leftover scan, every process (${processes} running)`, ms(median(every)))
  row(
    'leftover scan, pids newer than the shell',
    ms(median(floor)),
    `${ratio(median(floor), median(every))} of every process (target ≤ 2 ms)`,
  )
} finally {
  for (const sleeper of sleepers) sleeper.kill('SIGKILL')
}
