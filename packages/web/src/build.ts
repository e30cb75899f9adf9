import { existsSync, readdirSync, readFileSync, renameSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, isAbsolute, join, relative, resolve } from 'node:path'
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

/**
 * Beside the build (a dot file, so never served): the files outside src/client that went into it, relative to
 * src/client. The client imports the browser-safe entries of other packages (`@keel/todo/plan`, …), and an edit
 * there must rebuild it too.
 */
const SHARED_SOURCES = '.shared-sources.json'

function sharedSources(out: string): string[] | undefined {
  try {
    const list: unknown = JSON.parse(readFileSync(join(out, SHARED_SOURCES), 'utf8'))
    return Array.isArray(list) && list.every((file) => typeof file === 'string') ? list : undefined
  } catch {
    return undefined
  }
}

/** The newest modification time among the client's sources: src/client and the shared files the build listed. */
function newestSource(source: string, shared: readonly string[]): number {
  let newest = newestMtime(source)
  for (const file of shared) newest = Math.max(newest, statSync(resolve(source, file)).mtimeMs)
  return newest
}

/**
 * The built client exists and is newer than every source it was built from: src/client and the modules of other
 * packages it bundled. A build without the list of those (or naming a file that is gone) is stale.
 */
export function clientIsFresh(source = clientSourceDir(), out = clientDistDir()): boolean {
  // Without sources (an installed package) the shipped build is the only one there is.
  if (!existsSync(source) && existsSync(join(out, 'index.html'))) return true
  try {
    const shared = sharedSources(out)
    return shared !== undefined && statSync(join(out, 'index.html')).mtimeMs >= newestSource(source, shared)
  } catch {
    return false
  }
}

/** The files of a Vite build outside `source` and outside node_modules, relative to `source`. */
function sharedModules(result: unknown, source: string): string[] {
  const files = new Set<string>()
  for (const output of Array.isArray(result) ? result : [result]) {
    for (const chunk of (output as { output?: { type: string; moduleIds?: string[] }[] }).output ?? []) {
      for (const id of chunk.type === 'chunk' ? (chunk.moduleIds ?? []) : []) {
        // Virtual modules (a NUL prefix) and query-suffixed ids are not files of ours.
        if (!isAbsolute(id) || id.includes('node_modules') || id.includes('?')) continue
        const path = relative(source, id)
        if (path.startsWith('..')) files.add(path)
      }
    }
  }
  return [...files].sort()
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
  const startedAt = Date.now()
  const sourcesAsOf = newestMtime(source)
  const temp = `${out}.tmp-${process.pid}-${Date.now()}`
  try {
    const result = await build({
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
    const shared = sharedModules(result, source)
    writeFileSync(join(temp, SHARED_SOURCES), `${JSON.stringify(shared, null, 2)}\n`)
    // Shared files are known only now; one edited while the build ran stays newer than the stamp, so the next start
    // rebuilds (as a src/client file edited meanwhile does).
    const sharedAsOf = shared.map((file) => statSync(resolve(source, file)).mtimeMs).filter((time) => time < startedAt)
    stamp(temp, Math.max(sourcesAsOf, ...sharedAsOf))
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
