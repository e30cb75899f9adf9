// Bundles the keel CLI into dist/ with esbuild so a cold start loads one module graph instead of compiling
// TypeScript, and builds the web client when it is missing or stale. bin/keel.js uses the bundle only while it is
// newer than every source file. `npm install` (prepare) and `npm pack` run this.
//
// The chunks are CommonJS (`dist/*.cjs`), loaded by bin/keel.js with V8's code cache (`dist/code-cache/`): Node 20
// can give cached bytecode to a script but not to an ES module, and compiling the chunks was about a third of a
// cold `keel -p`. esbuild splits only ES modules, so the bundle is built as ESM chunks first and each chunk is then
// rewritten as CommonJS. A short scripted `keel -p` run (and a `keel serve` that answers one page) fills the cache;
// bin/bundle-loader.js loads the chunks and writes the cache of any that had none.
import { build, transform } from 'esbuild'
import { init as initLexer, parse as parseModule } from 'es-module-lexer'
import { spawn } from 'node:child_process'
import {
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
} from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { cordisPatches } from './cordis-patches.mjs'
import { sandboxRuntimePatches } from './runtime-patches.mjs'

const root = fileURLToPath(new URL('..', import.meta.url))
const quiet = process.argv.includes('--quiet')
// `--metafile=<file>` writes esbuild's metafile (the bytes each module keeps in each chunk) for size work.
const metafile = process.argv.find((arg) => arg.startsWith('--metafile='))?.slice('--metafile='.length)

// The web client first: `keel serve` from an installed package serves this build and cannot make one.
const { register } = await import('tsx/esm/api')
const unregister = register()
const { ensureClientBuilt } = await import('../packages/web/src/build.ts')
await ensureClientBuilt({ log: quiet ? undefined : (line) => console.log(line) })
await unregister()

// Build beside dist/ and swap it in, so a keel process starting meanwhile never sees a half-written bundle.
const esm = `${root}dist.esm-${process.pid}`
const next = `${root}dist.next-${process.pid}`
const result = await build({
  metafile: metafile !== undefined,
  entryPoints: [`${root}packages/cli/src/bin.ts`],
  outdir: esm,
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: 'node20',
  logLevel: 'warning',
  // Build tools and the browser driver are loaded from node_modules when (rarely) needed; an installed package has
  // none. The sandbox runtime is bundled: a global install has no node_modules, and without the runtime every command
  // would be denied. Bundled, it looks for its seccomp helpers beside the bundle (copied below).
  external: ['vite', '@vitejs/plugin-react', 'playwright-core', 'esbuild', 'typescript', 'tsx'],
  plugins: [cordisPatches, sandboxRuntimePatches],
})
if (metafile) writeFileSync(metafile, JSON.stringify(result.metafile))
mkdirSync(next)
await initLexer
for (const name of readdirSync(esm)) {
  // esbuild's `// packages/…` and `// node_modules/…` lines say which module each part of a chunk holds (the modules
  // test reads them); a transform drops plain comments and keeps legal ones (`//!`).
  const source = routeDynamicImports(readFileSync(join(esm, name), 'utf8')).replace(
    /^\/\/ ((?:node_modules|packages)\/\S+)$/gm,
    '//! $1',
  )
  const { code } = await transform(source, {
    format: 'cjs',
    platform: 'node',
    target: 'node20',
    // bin/keel.js passes each chunk its own file URL under this name.
    define: { 'import.meta.url': '__keelUrl' },
    logLevel: 'warning',
  })
  // Wrapped here, as Node wraps a CommonJS file, so the loader compiles the file's text as it is: a wrapper added at
  // run time would copy the whole source once more (3 MB for the shell parser's chunk) on every start.
  writeFileSync(
    join(next, name.replace(/\.js$/, '.cjs')),
    `(function (exports, require, module, __filename, __dirname, __keelUrl, __keelImport) {${code}\n})`,
  )
}
rmSync(esm, { recursive: true, force: true })
// web_fetch's HTML converter runs in a worker thread from its own file (packages/fetch/src/html-worker.cjs), found
// beside the chunk that starts it: one self-contained script with its parsers bundled in.
await build({
  entryPoints: [`${root}packages/fetch/src/html-worker.cjs`],
  outfile: join(next, 'html-worker.cjs'),
  bundle: true,
  format: 'cjs',
  platform: 'node',
  target: 'node20',
  logLevel: 'warning',
})
// The PostgreSQL session store's client runs in a worker thread from its own file (packages/store-pg/src/
// pg-worker.cjs), found beside the chunk that starts it: pg bundled in, so a global install can use a database.
// pg-native (pg's optional libpq binding) is not shipped; nothing here asks for it.
await build({
  entryPoints: [`${root}packages/store-pg/src/pg-worker.cjs`],
  outfile: join(next, 'pg-worker.cjs'),
  bundle: true,
  format: 'cjs',
  platform: 'node',
  target: 'node20',
  logLevel: 'warning',
  external: ['pg-native'],
})
// What the bundled runtime looks for beside the bundle (<bundle dir>/vendor/…): the prebuilt apply-seccomp helpers
// and BPF filters (x64, arm64), and the JVM proxy agent. A file it cannot find there it looks for in a global npm
// install, by spawning a whole `npm root -g` (about 0.3 s) before the first sandboxed command of every process. The
// install test runs the packed tarball with an `npm` on PATH that fails the run if called. (vendor/srt-win is for
// Windows, and not shipped.)
const runtime = fileURLToPath(new URL('../', import.meta.resolve('@anthropic-ai/sandbox-runtime')))
for (const arch of ['x64', 'arm64'])
  cpSync(join(runtime, 'vendor', 'seccomp', arch), join(next, 'vendor', 'seccomp', arch), { recursive: true })
cpSync(
  join(runtime, 'vendor', 'java-proxy-agent', 'srt-proxy-agent.jar'),
  join(next, 'vendor', 'java-proxy-agent', 'srt-proxy-agent.jar'),
)
const old = `${root}dist.old-${process.pid}`
if (existsSync(`${root}dist`)) renameSync(`${root}dist`, old)
renameSync(next, `${root}dist`)
rmSync(old, { recursive: true, force: true })
await fillCodeCache()
if (!quiet) console.log('keel: built dist/bin.cjs')

/**
 * Every `import(…)` of a chunk becomes `__keelImport(…)`, which bin/keel.js passes in: Node 20 loses the dynamic-import
 * callback of a script compiled from cached bytecode ("A dynamic import callback was not specified"), so no import()
 * may stay in a chunk. The helper loads a chunk (`./<chunk>.js`) itself and anything else (vite, the sandbox runtime,
 * a composition's plugin) with Node's own import(). es-module-lexer finds them: a regular expression would also match
 * the word in strings and comments.
 */
function routeDynamicImports(source) {
  const [imports] = parseModule(source)
  let out = ''
  let at = 0
  for (const entry of imports) {
    if (entry.d < 0) continue // a static import or export; the CommonJS transform turns it into require()
    out += `${source.slice(at, entry.ss)}__keelImport`
    at = entry.d
  }
  return out + source.slice(at)
}

/**
 * Runs the new bundle the way a person would: a one-step scripted `keel -p`, then `keel serve` until its page has
 * been served. Each writes the bytecode of the chunks it ran to dist/code-cache/ as it exits (bin/bundle-loader.js).
 * A failure only costs speed (chunks without a cache compile as usual, and write one), so it warns.
 */
async function fillCodeCache() {
  const scratch = mkdtempSync(join(tmpdir(), 'keel-code-cache-'))
  const env = { ...process.env, KEEL_HOME: join(scratch, 'home'), KEEL_FROM_SOURCE: '' }
  const keel = (args) => spawn(process.execPath, [`${root}bin/keel.js`, ...args], { cwd: scratch, env })
  try {
    const script = join(scratch, 'one-step.json')
    writeFileSync(script, JSON.stringify({ steps: [{ text: 'ok' }] }))
    const print = keel(['-p', 'hi', '--model', `scripted/${script}`])
    const code = await new Promise((done) => print.on('close', done))
    if (code !== 0) throw new Error(`keel -p exited ${code}`)
    const serve = keel(['serve', '--port', '0', '--model', `scripted/${script}`])
    const closed = new Promise((done) => serve.on('close', done))
    try {
      const url = await new Promise((resolve, reject) => {
        let out = ''
        serve.stdout.on('data', (chunk) => {
          out += chunk
          const found = /http:\/\/\S+/.exec(out)?.[0]
          if (found) resolve(found)
        })
        serve.on('close', (code) => reject(new Error(`keel serve exited ${code}`)))
      })
      await (await fetch(url)).text()
    } finally {
      serve.kill('SIGTERM')
      await closed
    }
    // Both runs exited cleanly; without a cache they did not run this bundle (bin/keel.js took it for stale).
    if (!existsSync(join(root, 'dist', 'code-cache'))) throw new Error('the runs did not use the new bundle')
  } catch (error) {
    console.warn(`keel: warning: the code cache was not filled (${error.message}); start-up is slower, nothing else`)
  } finally {
    rmSync(scratch, { recursive: true, force: true })
  }
}
