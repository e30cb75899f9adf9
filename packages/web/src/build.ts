import { existsSync, readdirSync, renameSync, rmSync, statSync, utimesSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

/**
 * This package's folder, found by walking up from this module, so the same lookup works from the TypeScript sources
 * and from the CLI bundle in dist/.
 */
export function webPackageDir(from = import.meta.url): string {
  let dir = dirname(fileURLToPath(from))
  for (;;) {
    for (const candidate of [dir, join(dir, 'packages/web')]) {
      // An installed package ships the built client without its sources.
      if (existsSync(join(candidate, 'src/client/index.html')) || existsSync(join(candidate, 'client-dist/index.html')))
        return candidate
    }
    const parent = dirname(dir)
    if (parent === dir)
      throw new Error(`cannot find the web client sources (packages/web/src/client) near ${fileURLToPath(from)}`)
    dir = parent
  }
}

export const clientSourceDir = (): string => join(webPackageDir(), 'src/client')
export const clientDistDir = (): string => join(webPackageDir(), 'client-dist')

function newestMtime(dir: string, newest = 0): number {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    if (entry.name.startsWith('.') || entry.name === 'node_modules') continue
    const path = join(dir, entry.name)
    newest = entry.isDirectory() ? newestMtime(path, newest) : Math.max(newest, statSync(path).mtimeMs)
  }
  return newest
}

/**
 * Dates every built file to the sources it was built from (as SOURCE_DATE_EPOCH does), so the build never looks
 * newer than the code: bin/keel.js compares the CLI bundle against every file under packages/, this one included.
 */
function stamp(dir: string, mtimeMs: number): void {
  // Rounded up to the millisecond: file times keep less precision than mtimeMs reports, and must not fall below it.
  const when = Math.ceil(mtimeMs) / 1000
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name)
    if (entry.isDirectory()) stamp(path, mtimeMs)
    utimesSync(path, when, when)
  }
}

/** The built client exists and is newer than every client source file. */
export function clientIsFresh(source = clientSourceDir(), out = clientDistDir()): boolean {
  // Without sources (an installed package) the shipped build is the only one there is.
  if (!existsSync(source) && existsSync(join(out, 'index.html'))) return true
  try {
    return statSync(join(out, 'index.html')).mtimeMs >= newestMtime(source)
  } catch {
    return false
  }
}

/**
 * Builds the client with Vite's JS API when `client-dist/` is missing or older than the sources, and returns its
 * folder. The build goes to a private folder that is then renamed into place, so two processes building at once
 * never serve a half-written client.
 */
export async function ensureClientBuilt(
  options: { force?: boolean; log?: (line: string) => void } = {},
): Promise<string> {
  const source = clientSourceDir()
  const out = clientDistDir()
  if (!options.force && clientIsFresh(source, out)) return out
  let tools: [typeof import('vite'), typeof import('@vitejs/plugin-react')]
  try {
    tools = await Promise.all([import('vite'), import('@vitejs/plugin-react')])
  } catch {
    // A production install without the build tools: an older build beats no page at all.
    if (existsSync(join(out, 'index.html'))) {
      options.log?.('keel: warning: the web client is older than its sources and vite is not installed to rebuild it')
      return out
    }
    throw new Error(
      'the web client is not built and vite is not installed to build it; run npm install in the Keel checkout (dev dependencies included)',
    )
  }
  const [{ build }, { default: react }] = tools
  options.log?.('keel: building the web client (once after each change to packages/web/src/client)')
  const sourcesAsOf = newestMtime(source)
  const temp = `${out}.tmp-${process.pid}-${Date.now()}`
  try {
    await build({
      root: source,
      base: './',
      configFile: false,
      envDir: false,
      logLevel: 'warn',
      clearScreen: false,
      cacheDir: join(tmpdir(), 'keel-web-vite'),
      plugins: [react()],
      build: {
        outDir: temp,
        emptyOutDir: true,
        sourcemap: false,
        reportCompressedSize: false,
        chunkSizeWarningLimit: 1024,
      },
    })
    stamp(temp, sourcesAsOf)
    rmSync(out, { recursive: true, force: true })
    try {
      renameSync(temp, out)
    } catch (error) {
      // Another process put its (equally fresh) build in place between our rm and rename.
      if (!existsSync(join(out, 'index.html'))) throw error
    }
  } finally {
    rmSync(temp, { recursive: true, force: true })
  }
  return out
}
