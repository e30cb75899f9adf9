// End-to-end tests spawn the real `keel` binary; make sure its bundle is current so they run today's code, fast.
import { execFileSync } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { skipSummary } from './system-tools.ts'

/** Builds the bundle; the teardown ends the run with one line naming the system tools to install, if any is missing. */
export default function setup(): () => void {
  execFileSync(process.execPath, [fileURLToPath(new URL('../scripts/build.mjs', import.meta.url)), '--quiet'], {
    stdio: 'inherit',
  })
  return () => {
    const line = skipSummary()
    if (line) process.stderr.write(`\n${line}\n`)
  }
}
