// End-to-end tests spawn the real `keel` binary; make sure its bundle is current so they run today's code, fast.
import { execFileSync } from 'node:child_process'
import { fileURLToPath } from 'node:url'

export default function setup(): void {
  execFileSync(process.execPath, [fileURLToPath(new URL('../scripts/build.mjs', import.meta.url)), '--quiet'], {
    stdio: 'inherit',
  })
}
