#!/usr/bin/env node
// Runs the esbuild bundle (dist/, made by `npm install` or `node scripts/build.mjs`) when it is newer than every
// source file; otherwise runs the TypeScript sources through tsx, so an edit never runs stale code. An installed
// package (npm install -g) has no sources, only the bundle.
//
// The bundle's chunks are CommonJS scripts loaded here with V8's code cache (dist/code-cache/, filled by the build):
// bytecode that was compiled once is read instead of compiled again on every start (see scripts/build.mjs).
//
// CommonJS (bin/package.json says so): Node starts a CommonJS entry a few milliseconds sooner than an ES module one,
// which is most of what `keel --version` costs over bare Node. Everything else is ESM, loaded with import().
const { existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } = require('node:fs')
const { createRequire } = require('node:module')
const { join } = require('node:path')
const { pathToFileURL } = require('node:url')
const vm = require('node:vm')

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
  if (!existsSync(join(root, 'packages/cli/src/bin.ts'))) return true
  if (process.env.KEEL_FROM_SOURCE) return false
  try {
    return statSync(join(root, 'dist/bin.cjs')).mtimeMs >= newestSource(join(root, 'packages'))
  } catch {
    return false
  }
}

async function loadMain() {
  if (bundleIsFresh()) return loadBundle(join(root, 'dist')).main
  const { register } = await import('tsx/esm/api')
  register()
  return (await import(pathToFileURL(join(root, 'packages/cli/src/bin.ts')).href)).main
}

/**
 * Loads dist/bin.cjs and, as they are required, the chunks it names. Each chunk is compiled with its cached bytecode
 * when dist/code-cache/ has one V8 accepts (same V8, same flags, same source length; the build writes the bundle and
 * its cache together). With KEEL_WRITE_CODE_CACHE set, the bytecode of every chunk that ran is written there on exit.
 */
function loadBundle(dist) {
  const cacheDir = join(dist, 'code-cache')
  const loaded = new Map()
  const scripts = []
  const load = (name) => {
    const known = loaded.get(name)
    if (known) return known.exports
    const module = { exports: {} }
    loaded.set(name, module)
    const file = join(dist, name)
    let cachedData
    try {
      cachedData = readFileSync(join(cacheDir, name))
    } catch {}
    // The same wrapper as Node's own for CommonJS, plus the two names the build rewrote chunks to use.
    const script = new vm.Script(
      `(function (exports, require, module, __filename, __dirname, __keelUrl, __keelImport) {${readFileSync(file, 'utf8')}\n})`,
      { filename: file, cachedData },
    )
    scripts.push({ name, script })
    const nodeRequire = createRequire(file)
    const require = (id) => (id.startsWith('./') ? load(chunkName(id)) : nodeRequire(id))
    script.runInThisContext()(module.exports, require, module, file, dist, pathToFileURL(file).href, importAny)
    return module.exports
  }
  // The build made every import() of a chunk call this (scripts/build.mjs says why). Bare names resolve from here as
  // from dist/: both sit beside the same node_modules.
  const importAny = (id) =>
    id.startsWith('./') && id.endsWith('.js') ? Promise.resolve().then(() => load(chunkName(id))) : import(id)
  if (process.env.KEEL_WRITE_CODE_CACHE)
    process.on('exit', () => {
      mkdirSync(cacheDir, { recursive: true })
      for (const { name, script } of scripts) writeFileSync(join(cacheDir, name), script.createCachedData())
    })
  return load('bin.cjs')
}

/** `./chunk-ABC.js`, as esbuild named it in the ES module build, is `chunk-ABC.cjs` in dist/. */
function chunkName(id) {
  return id.slice(2).replace(/\.js$/, '.cjs')
}
