// End-to-end tests spawn the real `keel` binary; make sure its bundle is current so they run today's code, fast.
import { execFileSync } from 'node:child_process'
import { statSync } from 'node:fs'
import { createRequire } from 'node:module'
import { fileURLToPath } from 'node:url'
import { skipSummary } from './system-tools.ts'

const root = fileURLToPath(new URL('..', import.meta.url))
const { bundleIsFresh } = createRequire(import.meta.url)('../bin/bundle-fresh.js') as {
  bundleIsFresh(root: string): boolean
}

/**
 * The bundle bin/keel.js would run is current, and so is what made it: the build script, its esbuild plugin and the
 * installed dependencies (which the bundle holds).
 */
function bundleIsCurrent(): boolean {
  if (!bundleIsFresh(root)) return false
  const built = statSync(`${root}dist/bin.cjs`).mtimeMs
  const makers = ['scripts/build.mjs', 'scripts/cordis-patches.mjs', 'scripts/runtime-patches.mjs', 'package-lock.json']
  return makers.every((file) => statSync(`${root}${file}`).mtimeMs <= built)
}

/**
 * Builds the bundle unless `npm install` (or the last run) already built it from today's code: a build and its
 * code-cache runs cost every test run several seconds before the first file starts. The teardown ends the run with
 * one line naming the system tools to install, if any is missing.
 */
export default function setup(): () => void {
  if (!bundleIsCurrent()) execFileSync(process.execPath, [`${root}scripts/build.mjs`, '--quiet'], { stdio: 'inherit' })
  return () => {
    const line = skipSummary()
    if (line) process.stderr.write(`\n${line}\n`)
  }
}
