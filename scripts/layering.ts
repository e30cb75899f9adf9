// The dependency direction, checked: reads the layer table in docs/architecture.md ("Layers"), every workspace
// package.json and the `@keel/*` imports of every source file (static, `import type`, `export … from`, `import()`
// and `declare module` augmentations), and lists what breaks the rules. scripts/tests/layering.test.ts runs it.
//
// - A package's `src/` files and its `dependencies` may name packages of its own layer or below, never above.
// - The graph those edges make has no cycle.
// - Every `@keel/*` a file imports is declared: in `dependencies` for `src/`, in either field for tests and scripts
//   (those may reach any layer: a real-Loader test boots the CLI's composition).
// - A "narrow" row of the doc (`llm` takes `session` only through `@keel/session/messages`) allows those
//   specifiers only, and the module each one exports imports nothing (so taking it loads nothing else).
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs'
import { dirname, join, relative } from 'node:path'
import ts from 'typescript'

export interface Layer {
  name: string
  /** Directory names under packages/ (`session`, `llm`, …). */
  packages: string[]
}

/** `importer` may import `imported` only through these specifiers. */
export interface NarrowImport {
  importer: string
  imported: string
  specifiers: string[]
}

export interface Rules {
  layers: Layer[]
  narrow: NarrowImport[]
}

const LAYER_HEADER = /^\|\s*layer\s*\|\s*packages\s*\|/
const NARROW_HEADER = /^\|\s*package\s*\|\s*imports of\s*\|\s*only through\s*\|/

/** The rows of the markdown table whose header line matches `header`, as cells. */
function tableRows(markdown: string, header: RegExp): string[][] {
  const lines = markdown.split('\n')
  const start = lines.findIndex((line) => header.test(line))
  if (start < 0) return []
  const rows: string[][] = []
  for (const line of lines.slice(start + 2)) {
    if (!line.startsWith('|')) break
    rows.push(
      line
        .slice(1, line.trimEnd().endsWith('|') ? line.trimEnd().length - 1 : undefined)
        .split('|')
        .map((cell) => cell.trim()),
    )
  }
  return rows
}

/** The backticked names in a cell: "`llm`, `tools`" → ['llm', 'tools']. */
function codeSpans(cell: string): string[] {
  return [...cell.matchAll(/`([^`]+)`/g)].map((m) => m[1]!)
}

/** The layer table (bottom first) and the narrow-import table of docs/architecture.md. */
export function readRules(markdown: string): Rules {
  const layers = tableRows(markdown, LAYER_HEADER).map(([name = '', packages = '']) => ({
    name,
    packages: codeSpans(packages),
  }))
  const narrow = tableRows(markdown, NARROW_HEADER).map(([importer = '', imported = '', only = '']) => ({
    importer: codeSpans(importer)[0] ?? importer,
    imported: codeSpans(imported)[0] ?? imported,
    specifiers: codeSpans(only).filter((s) => s.startsWith('@')),
  }))
  return { layers, narrow }
}

export interface WorkspacePackage {
  /** The directory under packages/. */
  dir: string
  /** The `name` in its package.json (`@keel/<dir>`). */
  name: string
  dependencies: Record<string, string>
  devDependencies: Record<string, string>
  /** package.json `exports`: subpath (`.`, `./messages`) → file. */
  exports: Record<string, string>
}

export interface ImportSite {
  /** Relative to the workspace root, `/`-separated. */
  file: string
  line: number
  specifier: string
  /** The importing file is under the package's `src/` (shipped code), not a test or a script. */
  production: boolean
}

const SOURCE = /\.(ts|tsx|mts|cts|js|mjs|cjs|jsx)$/
const SKIP_DIRS = new Set(['node_modules', 'dist', 'client-dist', '.git'])

function sourceFiles(dir: string): string[] {
  const out: string[] = []
  for (const entry of readdirSync(dir).sort()) {
    if (SKIP_DIRS.has(entry)) continue
    const path = join(dir, entry)
    if (statSync(path).isDirectory()) out.push(...sourceFiles(path))
    else if (SOURCE.test(entry)) out.push(path)
  }
  return out
}

/** Every `@keel/*` specifier a file names, with its line. */
export function keelImports(text: string): { specifier: string; line: number }[] {
  const { importedFiles } = ts.preProcessFile(text, true, true)
  const starts = [0]
  for (let i = 0; i < text.length; i++) if (text[i] === '\n') starts.push(i + 1)
  const lineOf = (pos: number) => {
    let lo = 0
    let hi = starts.length - 1
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1
      if (starts[mid]! <= pos) lo = mid
      else hi = mid - 1
    }
    return lo + 1
  }
  return importedFiles
    .filter((f) => f.fileName.startsWith('@keel/'))
    .map((f) => ({ specifier: f.fileName, line: lineOf(f.pos) }))
}

/** `@keel/session/messages` → `session`. */
function packageDirOf(specifier: string): string {
  return specifier.slice('@keel/'.length).split('/')[0]!
}

export function readWorkspace(root: string): { packages: WorkspacePackage[]; imports: Map<string, ImportSite[]> } {
  const packages: WorkspacePackage[] = []
  const imports = new Map<string, ImportSite[]>()
  const base = join(root, 'packages')
  for (const dir of readdirSync(base).sort()) {
    const manifestPath = join(base, dir, 'package.json')
    if (!existsSync(manifestPath)) continue
    const manifest = JSON.parse(readFileSync(manifestPath, 'utf8'))
    packages.push({
      dir,
      name: manifest.name,
      dependencies: manifest.dependencies ?? {},
      devDependencies: manifest.devDependencies ?? {},
      exports: typeof manifest.exports === 'object' && manifest.exports ? manifest.exports : {},
    })
    const sites: ImportSite[] = []
    for (const path of sourceFiles(join(base, dir))) {
      const file = relative(root, path).split('\\').join('/')
      const production = file.startsWith(`packages/${dir}/src/`)
      for (const { specifier, line } of keelImports(readFileSync(path, 'utf8')))
        sites.push({ file, line, specifier, production })
    }
    imports.set(dir, sites)
  }
  return { packages, imports }
}

/** Every breach of the rules, one line each, naming the file and import (or the package.json) at fault. */
export function checkLayering(root: string, rules: Rules): string[] {
  const { packages, imports } = readWorkspace(root)
  const problems: string[] = []
  const rank = new Map<string, number>()
  rules.layers.forEach((layer, index) => {
    for (const dir of layer.packages) {
      if (rank.has(dir)) problems.push(`docs/architecture.md: \`${dir}\` is in two layers`)
      rank.set(dir, index)
    }
  })
  const layerName = (dir: string) => rules.layers[rank.get(dir)!]!.name
  const known = new Set(packages.map((p) => p.dir))
  for (const dir of rank.keys())
    if (!known.has(dir)) problems.push(`docs/architecture.md: layer table names \`${dir}\`, which is not in packages/`)
  for (const p of packages)
    if (!rank.has(p.dir)) problems.push(`packages/${p.dir}: in no layer of the table in docs/architecture.md`)
    else if (p.name !== `@keel/${p.dir}`) problems.push(`packages/${p.dir}/package.json: name is not @keel/${p.dir}`)

  /** An edge of the shipped graph, with where it comes from. */
  const edges = new Map<string, Map<string, string>>()
  const addEdge = (from: string, to: string, where: string) => {
    const out = edges.get(from) ?? new Map<string, string>()
    if (!out.has(to)) out.set(to, where)
    edges.set(from, out)
  }
  const against = (from: string, to: string) =>
    rank.has(from) && rank.has(to) && rank.get(to)! > rank.get(from)!
      ? `${from} (${layerName(from)}) may not import ${to} (${layerName(to)})`
      : undefined

  for (const p of packages) {
    for (const name of Object.keys(p.dependencies)) {
      if (!name.startsWith('@keel/')) continue
      const to = packageDirOf(name)
      const where = `packages/${p.dir}/package.json dependencies: ${name}`
      const wrong = against(p.dir, to)
      if (wrong) problems.push(`${where}: ${wrong}`)
      if (to !== p.dir) addEdge(p.dir, to, where)
    }
    for (const site of imports.get(p.dir) ?? []) {
      const to = packageDirOf(site.specifier)
      if (to === p.dir) continue
      const where = `${site.file}:${site.line} imports ${site.specifier}`
      const name = `@keel/${to}`
      if (!known.has(to)) {
        problems.push(`${where}: no such workspace package`)
        continue
      }
      if (site.production) {
        if (!(name in p.dependencies))
          problems.push(`${where}, which packages/${p.dir}/package.json does not declare in dependencies`)
        const wrong = against(p.dir, to)
        if (wrong) problems.push(`${where}: ${wrong}`)
        const narrow = rules.narrow.find((n) => n.importer === p.dir && n.imported === to)
        if (narrow && !narrow.specifiers.includes(site.specifier))
          problems.push(`${where}: ${p.dir} takes ${to} only through ${narrow.specifiers.join(', ')}`)
        addEdge(p.dir, to, where)
      } else if (!(name in p.dependencies) && !(name in p.devDependencies)) {
        problems.push(
          `${where}, which packages/${p.dir}/package.json declares in neither dependencies nor devDependencies`,
        )
      }
    }
  }
  for (const narrow of rules.narrow) {
    const target = packages.find((p) => p.dir === narrow.imported)
    for (const specifier of narrow.specifiers) {
      const file = target?.exports[`.${specifier.slice(`@keel/${narrow.imported}`.length)}`]
      if (!target || typeof file !== 'string') {
        problems.push(`docs/architecture.md: ${specifier} is not an export of packages/${narrow.imported}/package.json`)
        continue
      }
      const path = join(root, 'packages', target.dir, file)
      const outside = importsOutsideOwnFiles(path)
      if (outside.length)
        problems.push(
          `${relative(root, path).split('\\').join('/')}: ${specifier} may import only its own package's files, but reaches ${outside.join(', ')}`,
        )
    }
  }
  for (const p of packages) problems.push(...fileCycles(root, p.dir))
  for (const cycle of findCycles(edges))
    problems.push(
      `cycle ${cycle.join(' → ')}: ${cycle
        .slice(0, -1)
        .map((from, i) => edges.get(from)!.get(cycle[i + 1]!)!)
        .join('; ')}`,
    )
  return problems
}

/**
 * Files of one package's `src/` that import each other in a loop (relative imports, `import type` and `import()`
 * included): a module that reaches back to its importer cannot be read, loaded or moved on its own.
 */
function fileCycles(root: string, dir: string): string[] {
  const src = join(root, 'packages', dir, 'src')
  if (!existsSync(src)) return []
  const name = (path: string) => relative(root, path).split('\\').join('/')
  const edges = new Map<string, Map<string, string>>()
  for (const path of sourceFiles(src)) {
    const text = readFileSync(path, 'utf8')
    const out = new Map<string, string>()
    for (const { specifier, line } of relativeImports(text)) {
      const target = join(dirname(path), specifier)
      if (existsSync(target) && statSync(target).isFile() && !out.has(name(target)))
        out.set(name(target), `${name(path)}:${line} imports ${specifier}`)
    }
    edges.set(name(path), out)
  }
  return findCycles(edges).map(
    (cycle) =>
      `files import each other in a loop, ${cycle.join(' → ')}: ${cycle
        .slice(0, -1)
        .map((from, i) => edges.get(from)!.get(cycle[i + 1]!)!)
        .join('; ')}`,
  )
}

/** Every relative specifier a file names (`./x.ts`, `../y.ts`), with its line. */
function relativeImports(text: string): { specifier: string; line: number }[] {
  const { importedFiles } = ts.preProcessFile(text, true, true)
  return importedFiles
    .filter((f) => f.fileName.startsWith('./') || f.fileName.startsWith('../'))
    .map((f) => ({ specifier: f.fileName, line: text.slice(0, f.pos).split('\n').length }))
}

/** One cycle per strongly connected component that has one, as a closed path (`a → b → a`). */
function findCycles(edges: Map<string, Map<string, string>>): string[][] {
  const cycles: string[][] = []
  const done = new Set<string>()
  const visit = (node: string, path: string[]) => {
    const at = path.indexOf(node)
    if (at >= 0) {
      const cycle = [...path.slice(at), node]
      const key = [...cycle.slice(0, -1)].sort().join(',')
      if (!cycles.some((c) => [...c.slice(0, -1)].sort().join(',') === key)) cycles.push(cycle)
      return
    }
    if (done.has(node)) return
    for (const next of [...(edges.get(node)?.keys() ?? [])].sort()) visit(next, [...path, node])
    done.add(node)
  }
  for (const node of [...edges.keys()].sort()) visit(node, [])
  return cycles
}

/**
 * What a narrow entry's module graph imports besides relative files of its own package (Node built-ins, packages):
 * each one is a way for the importer to load more than the entry promises.
 */
function importsOutsideOwnFiles(entry: string): string[] {
  const outside = new Set<string>()
  const seen = new Set<string>()
  const visit = (path: string) => {
    if (seen.has(path)) return
    seen.add(path)
    for (const { fileName } of ts.preProcessFile(readFileSync(path, 'utf8'), true, true).importedFiles) {
      if (fileName.startsWith('./') || fileName.startsWith('../')) visit(join(dirname(path), fileName))
      // cordis, the framework every plugin is written against, is no Keel package: it cannot close a cycle.
      else if (fileName !== 'cordis') outside.add(fileName)
    }
  }
  visit(entry)
  return [...outside]
}
