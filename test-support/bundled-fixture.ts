// A TypeScript fixture that a test starts as many child processes, bundled once per test process with esbuild:
// `node --import tsx` compiled the fixture and every workspace package it imports again in each child (~0.85 s a
// start). The workspace packages (@keel/*) are bundled from today's sources, as the children would have run them;
// every other package stays external and loads from node_modules, as under tsx.
import { buildSync } from 'esbuild'
import { createHash } from 'node:crypto'
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs'
import { basename, join } from 'node:path'
import { fileURLToPath } from 'node:url'

const root = fileURLToPath(new URL('..', import.meta.url))
const built = new Map<string, string>()

/** The packages the workspace depends on, but not its own (@keel/*). */
function thirdParty(): string[] {
  const manifests = [
    join(root, 'package.json'),
    ...readdirSync(join(root, 'packages')).map((name) => join(root, 'packages', name, 'package.json')),
  ]
  const names = new Set<string>()
  for (const file of manifests) {
    let manifest: Record<string, Record<string, string> | undefined>
    try {
      manifest = JSON.parse(readFileSync(file, 'utf8'))
    } catch {
      continue
    }
    for (const field of ['dependencies', 'devDependencies', 'peerDependencies', 'optionalDependencies'])
      for (const name of Object.keys(manifest[field] ?? {})) if (!name.startsWith('@keel/')) names.add(name)
  }
  return [...names].flatMap((name) => [name, `${name}/*`])
}

/**
 * The path of `entry` bundled as an ES module under node_modules/.cache (where its external imports resolve), named
 * by its contents: runs and workers share one file per version of the code, written whole before it is named.
 */
export function bundledFixture(entry: string): string {
  const done = built.get(entry)
  if (done) return done
  const dir = join(root, 'node_modules', '.cache', 'keel-fixtures')
  mkdirSync(dir, { recursive: true })
  const { outputFiles } = buildSync({
    entryPoints: [entry],
    bundle: true,
    write: false,
    format: 'esm',
    platform: 'node',
    target: 'node20',
    external: thirdParty(),
    logLevel: 'warning',
  })
  const code = outputFiles[0]!.contents
  const hash = createHash('sha256').update(code).digest('hex').slice(0, 16)
  const out = join(dir, `${basename(entry, '.ts')}-${hash}.mjs`)
  if (!existsSync(out)) {
    const partial = `${out}.${process.pid}`
    writeFileSync(partial, code)
    renameSync(partial, out)
  }
  copyWorkers(new TextDecoder().decode(code), dir)
  built.set(entry, out)
  return out
}

/**
 * The files the bundle loads beside itself (`new URL('./pg-worker.cjs', import.meta.url)`), copied from the package
 * that holds them, as scripts/build.mjs ships them beside the CLI's bundle.
 */
function copyWorkers(code: string, dir: string): void {
  for (const [, name] of code.matchAll(/new URL\(["']\.\/([\w.-]+)["'], import\.meta\.url\)/g)) {
    const source = readdirSync(join(root, 'packages'))
      .map((pkg) => join(root, 'packages', pkg, 'src', name!))
      .find((file) => existsSync(file))
    const target = join(dir, name!)
    if (source && !(existsSync(target) && readFileSync(target).equals(readFileSync(source)))) {
      const partial = join(dir, `${name}.${process.pid}`)
      copyFileSync(source, partial)
      renameSync(partial, target)
    }
  }
}
