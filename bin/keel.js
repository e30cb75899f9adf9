#!/usr/bin/env node
// Runs the esbuild bundle (dist/, made by `npm install` or `node scripts/build.mjs`) when it is newer than every
// source file; otherwise runs the TypeScript sources through tsx, so an edit never runs stale code. An installed
// package (npm install -g) has no sources, only the bundle.
import { existsSync, readdirSync, statSync } from 'node:fs'
import { fileURLToPath } from 'node:url'

const root = fileURLToPath(new URL('..', import.meta.url))

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
    else newest = Math.max(newest, statSync(path).mtimeMs)
  }
  return newest
}

function bundleIsFresh() {
  if (!existsSync(`${root}packages/cli/src/bin.ts`)) return true
  if (process.env.KEEL_FROM_SOURCE) return false
  try {
    return statSync(`${root}dist/bin.js`).mtimeMs >= newestSource(`${root}packages`)
  } catch {
    return false
  }
}

let main
if (bundleIsFresh()) {
  ;({ main } = await import('../dist/bin.js'))
} else {
  const { register } = await import('tsx/esm/api')
  register()
  ;({ main } = await import('../packages/cli/src/bin.ts'))
}
process.exitCode = await main(process.argv.slice(2))
