// Loads the bundle (dist/bin.cjs and the chunks it names) with V8's code cache: bytecode compiled by an earlier run
// is read instead of compiled again. Node 20 gives cached bytecode to a script, not to an ES module, which is why the
// chunks are CommonJS (scripts/build.mjs builds them and fills the cache by running keel once).
//
// A chunk without bytecode V8 accepts (none yet, another Node, other V8 flags) is compiled as usual, and its bytecode
// is written on exit: to dist/code-cache/ when this install can write there (a checkout; the build's own runs), else
// to $KEEL_HOME/code-cache/<node>-<arch>-<bundle>/. A cache is only ever speed: any failure to read or write one is
// ignored.
const {
  accessSync,
  closeSync,
  constants,
  fstatSync,
  mkdirSync,
  openSync,
  readFileSync,
  renameSync,
  writeFileSync,
} = require('node:fs')
const { createRequire } = require('node:module')
const { join } = require('node:path')
const { pathToFileURL } = require('node:url')
const vm = require('node:vm')

/** Runs dist/bin.cjs; returns its exports. */
function loadBundle(dist) {
  const cacheDir = codeCacheDir(dist)
  const loaded = new Map()
  /** Every chunk compiled, in order, and whether V8 took its cached bytecode. */
  const compiled = []
  // packages/cli/src/memory.ts changes a V8 flag after boot, and says so here first: V8 refuses bytecode cached under
  // other flags, so a chunk compiled before the change is written back under the flags it will be read with.
  let beforeFlagChange = Number.POSITIVE_INFINITY
  let undoFlagChange
  globalThis[Symbol.for('keel.flagsChanging')] = (undo) => {
    beforeFlagChange = compiled.length
    undoFlagChange = undo
  }

  const load = (name) => {
    const known = loaded.get(name)
    if (known) return known.exports
    const module = { exports: {} }
    loaded.set(name, module)
    const file = join(dist, name)
    const cachedData = readCachedData(join(cacheDir, name))
    // Each chunk is one function expression: Node's CommonJS wrapper, plus the two names the build rewrote chunks to
    // use (scripts/build.mjs).
    const script = new vm.Script(readFileSync(file, 'utf8'), { filename: file, cachedData })
    compiled.push({ name, script, cached: cachedData !== undefined && !script.cachedDataRejected })
    const nodeRequire = createRequire(file)
    const require = (id) => (id.startsWith('./') ? load(chunkName(id)) : nodeRequire(id))
    script.runInThisContext()(module.exports, require, module, file, dist, pathToFileURL(file).href, importAny)
    return module.exports
  }
  // Every import() in a chunk calls this instead (scripts/build.mjs says why). A bare name resolves from here as it
  // would from dist/: both sit beside the same node_modules. A chunk loads on the event loop's next turn, not in the
  // same run of microtasks: what a start already has going (print mode's first request on its way, keel serve's page
  // being asked for) moves on between the chunks the boot loads.
  const nextTurn = () => new Promise((done) => setImmediate(done))
  const importAny = (id) =>
    id.startsWith('./') && id.endsWith('.js') ? nextTurn().then(() => load(chunkName(id))) : import(id)

  process.on('exit', () => {
    const missing = compiled.map((chunk, index) => ({ ...chunk, index })).filter((chunk) => !chunk.cached)
    if (!missing.length) return
    try {
      mkdirSync(cacheDir, { recursive: true })
      // Chunks compiled after the flag change under the current flags, then the earlier ones under the original.
      for (const chunk of missing) if (chunk.index >= beforeFlagChange) writeAtomically(cacheDir, chunk)
      undoFlagChange?.()
      for (const chunk of missing) if (chunk.index < beforeFlagChange) writeAtomically(cacheDir, chunk)
    } catch {}
  })
  return load('bin.cjs')
}

/** Bytecode of a chunk is a few MB at most; a bigger file is not a cache this loader wrote. */
const CACHE_LIMIT = 64 * 1024 * 1024

/**
 * A chunk's cached bytecode, or undefined unless it is a regular file under CACHE_LIMIT: the cache may live under
 * KEEL_HOME, where a FIFO or a link to /dev/zero would otherwise hang or flood every start. Opened without following
 * a link and without blocking, and checked after the open, so nothing can be swapped in between.
 */
function readCachedData(path) {
  let fd
  try {
    fd = openSync(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK)
  } catch {
    return undefined
  }
  try {
    const stats = fstatSync(fd)
    return stats.isFile() && stats.size <= CACHE_LIMIT ? readFileSync(fd) : undefined
  } catch {
    return undefined
  } finally {
    closeSync(fd)
  }
}

/** dist/code-cache when this process may write it, else a folder of its own under KEEL_HOME for this Node and bundle. */
function codeCacheDir(dist) {
  try {
    accessSync(dist, constants.W_OK)
    return join(dist, 'code-cache')
  } catch {}
  // Chunk names carry a hash of their content, bin.cjs does not: the folder is named for it, so another version's
  // bytecode (V8 checks only the source's length) is never offered to this one.
  const bundle = require('node:crypto')
    .createHash('sha256')
    .update(readFileSync(join(dist, 'bin.cjs')))
    .digest('hex')
    .slice(0, 16)
  const home = process.env.KEEL_HOME || join(require('node:os').homedir(), '.keel')
  return join(home, 'code-cache', `${process.version}-${process.arch}-${bundle}`)
}

function writeAtomically(dir, chunk) {
  const temp = join(dir, `${chunk.name}.${process.pid}.tmp`)
  writeFileSync(temp, chunk.script.createCachedData())
  renameSync(temp, join(dir, chunk.name))
}

/** `./chunk-ABC.js`, as esbuild named it in the ES module build, is `chunk-ABC.cjs` in dist/. */
function chunkName(id) {
  return id.slice(2).replace(/\.js$/, '.cjs')
}

module.exports = { loadBundle }
