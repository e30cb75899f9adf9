// Bundles the keel CLI into dist/ with esbuild so a cold start loads one module graph instead of compiling
// TypeScript, and builds the web client when it is missing or stale. bin/keel.js uses the bundle only while it is
// newer than every source file. `npm install` (prepare) and `npm pack` run this.
import { build } from 'esbuild'
import { existsSync, renameSync, rmSync, writeFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'

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
const next = `${root}dist.next-${process.pid}`
const result = await build({
  metafile: metafile !== undefined,
  entryPoints: [`${root}packages/cli/src/bin.ts`],
  outdir: next,
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: 'node20',
  logLevel: 'warning',
  // Build tools and the browser driver are loaded from node_modules when (rarely) needed. The sandbox runtime finds
  // its helper binaries (vendor/seccomp) next to its own files, so it must stay where npm put it.
  external: [
    'vite',
    '@vitejs/plugin-react',
    'playwright-core',
    'esbuild',
    'typescript',
    'tsx',
    '@anthropic-ai/sandbox-runtime',
  ],
  banner: {
    js: "import { createRequire as __keelRequire } from 'node:module'; const require = __keelRequire(import.meta.url);",
  },
})
if (metafile) writeFileSync(metafile, JSON.stringify(result.metafile))
const old = `${root}dist.old-${process.pid}`
if (existsSync(`${root}dist`)) renameSync(`${root}dist`, old)
renameSync(next, `${root}dist`)
rmSync(old, { recursive: true, force: true })
if (!quiet) console.log('keel: built dist/bin.js')
