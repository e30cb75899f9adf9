#!/usr/bin/env node
// Runs the esbuild bundle (dist/, made by `npm install` or `node scripts/build.mjs`) when it is newer than every
// source file; otherwise runs the TypeScript sources through tsx, so an edit never runs stale code. An installed
// package (npm install -g) has no sources, only the bundle.
//
// The bundle's chunks are CommonJS scripts that bundle-loader.js runs with V8's code cache: bytecode compiled once
// is read instead of compiled again on every start.
//
// CommonJS (bin/package.json says so): Node starts a CommonJS entry a few milliseconds sooner than an ES module one,
// which is most of what `keel --version` costs over bare Node. Everything else is ESM, loaded with import().
const { readFileSync } = require('node:fs')
const { join } = require('node:path')
const { pathToFileURL } = require('node:url')

const root = join(__dirname, '..')

// `keel --version` alone is answered here, before any bundle or source is looked at: the version is a field of a
// file every install has. Anything else (even `--version` with other arguments) goes through the parser.
const argv = process.argv.slice(2)
if (argv.length === 1 && (argv[0] === '--version' || argv[0] === '-v')) {
  const { version } = JSON.parse(readFileSync(join(root, 'packages/cli/package.json'), 'utf8'))
  process.stdout.write(`keel ${version}\n`)
} else {
  run().catch((error) => {
    process.stderr.write(`keel: ${error instanceof Error ? error.message : String(error)}\n`)
    process.exitCode = 1
  })
}

async function run() {
  const main = await loadMain()
  process.exitCode = await main(argv)
}

async function loadMain() {
  const { bundleIsFresh } = require('./bundle-fresh.js')
  if (bundleIsFresh(root)) {
    const { loadBundle } = require('./bundle-loader.js')
    return loadBundle(join(root, 'dist')).main
  }
  const { register } = await import('tsx/esm/api')
  register()
  return (await import(pathToFileURL(join(root, 'packages/cli/src/bin.ts')).href)).main
}
