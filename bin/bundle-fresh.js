// Whether dist/ holds a bundle of today's sources, for bin/keel.js (which runs the bundle only then, else the sources
// through tsx) and for the tests' global setup (which builds only when it does not).
const { existsSync, readdirSync, statSync } = require('node:fs')
const { join } = require('node:path')

/**
 * The newest modification time of the code esbuild bundles. A README or a shipped YAML file is read at run time, so
 * editing one leaves the bundle fresh.
 */
function newestSource(dir, newest = 0) {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    if (
      entry.name === 'node_modules' ||
      entry.name === 'tests' ||
      entry.name === 'client-dist' ||
      entry.name.startsWith('.')
    )
      continue
    const path = `${dir}/${entry.name}`
    if (entry.isDirectory()) newest = newestSource(path, newest)
    else if (/\.(ts|tsx|js|mjs|cjs|json)$/.test(entry.name)) newest = Math.max(newest, statSync(path).mtimeMs)
  }
  return newest
}

/** True when `root` is an installed package (no sources) or its dist/bin.cjs is newer than every source file. */
function bundleIsFresh(root) {
  if (!existsSync(join(root, 'packages/cli/src/bin.ts'))) return true
  if (process.env.KEEL_FROM_SOURCE) return false
  try {
    return statSync(join(root, 'dist/bin.cjs')).mtimeMs >= newestSource(join(root, 'packages'))
  } catch {
    return false
  }
}

module.exports = { bundleIsFresh }
