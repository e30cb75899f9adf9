// Whether a module can run in the browser, checked the way a bundler finds out: esbuild bundles it for the browser
// platform, where `node:` built-ins and Node-only packages (which reach them) do not resolve. Nothing is written.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, relative } from 'node:path'
import { build } from 'esbuild'

export interface BrowserBundle {
  /** Every file the bundle would hold, relative to the repository root (node_modules paths included). */
  inputs: string[]
  /** esbuild's errors: each import that does not resolve for the browser. Empty when the module is browser-safe. */
  errors: string[]
}

const ROOT = join(import.meta.dirname, '..')

/** Bundles `entry` (a file path or a package specifier such as `@keel/todo/plan`) for the browser. */
export async function browserBundle(entry: string): Promise<BrowserBundle> {
  // CSS imports need an output folder even when nothing is written.
  const outdir = mkdtempSync(join(tmpdir(), 'keel-browser-bundle-'))
  try {
    const result = await build({
      stdin: { contents: `import ${JSON.stringify(entry)}`, resolveDir: ROOT, loader: 'ts' },
      bundle: true,
      write: false,
      outdir,
      platform: 'browser',
      format: 'esm',
      jsx: 'automatic',
      metafile: true,
      logLevel: 'silent',
    })
    return { inputs: Object.keys(result.metafile.inputs).filter((file) => file !== '<stdin>'), errors: [] }
  } catch (error) {
    const errors = (error as { errors?: { text: string; location?: { file: string } | null }[] }).errors
    if (!errors) throw error
    return {
      inputs: [],
      errors: errors.map((e) => (e.location ? `${relative(ROOT, join(ROOT, e.location.file))}: ${e.text}` : e.text)),
    }
  } finally {
    rmSync(outdir, { recursive: true, force: true })
  }
}
