// The dependency direction of docs/architecture.md ("Layers"), held against the real workspace, and the checker
// itself against small workspaces that break each rule once.
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { checkLayering, keelImports, readRules } from '../layering.ts'

const root = join(import.meta.dirname, '../..')
const architecture = readFileSync(join(root, 'docs/architecture.md'), 'utf8')

describe('the workspace', () => {
  it('follows the layer table in docs/architecture.md: no upward import, no cycle, every @keel import declared', () => {
    const rules = readRules(architecture)
    expect(rules.layers.map((layer) => layer.name)).toContain('front doors')
    expect(checkLayering(root, rules)).toEqual([])
  })
})

const RULES = `
| layer | packages | what it holds |
|---|---|---|
| log | \`base\` | the bottom |
| middle | \`mid\`, \`side\` | in between |
| top | \`app\` | the binary |

| package | imports of | only through |
|---|---|---|
| \`side\` | \`base\` | \`@keel/base/types\` |
`

const roots: string[] = []
afterEach(() => {
  for (const dir of roots.splice(0)) rmSync(dir, { recursive: true, force: true })
})

/** A workspace of packages: dir → [package.json fields, files (path under the package → text)]. */
function workspace(
  packages: Record<
    string,
    [{ dependencies?: object; devDependencies?: object; exports?: object }, Record<string, string>]
  >,
): string {
  const dir = mkdtempSync(join(tmpdir(), 'keel-layering-'))
  roots.push(dir)
  for (const [name, [manifest, files]] of Object.entries(packages)) {
    const write = (path: string, text: string) => {
      mkdirSync(dirname(join(dir, 'packages', name, path)), { recursive: true })
      writeFileSync(join(dir, 'packages', name, path), text)
    }
    write('package.json', JSON.stringify({ name: `@keel/${name}`, ...manifest }))
    for (const [path, text] of Object.entries(files)) write(path, text)
  }
  return dir
}

const clean = () => ({
  base: [
    { exports: { '.': './src/index.ts', './types': './src/types.ts' } },
    { 'src/index.ts': 'export const x = 1\n', 'src/types.ts': 'export type T = 1\n' },
  ] as const,
  mid: [{ dependencies: { '@keel/base': '0.1.0' } }, { 'src/index.ts': "import { x } from '@keel/base'\n" }] as const,
  side: [
    { dependencies: { '@keel/base': '0.1.0', '@keel/mid': '0.1.0' } },
    { 'src/index.ts': "import type { T } from '@keel/base/types'\nimport '@keel/mid'\n" },
  ] as const,
  app: [
    { dependencies: { '@keel/mid': '0.1.0', '@keel/side': '0.1.0' } },
    { 'src/index.ts': "export * from '@keel/mid'\nawait import('@keel/side')\n" },
  ] as const,
})

type Fixture = Parameters<typeof workspace>[0]

describe('the checker', () => {
  const rules = readRules(RULES)

  it('reads the layer table bottom first and the narrow-import table', () => {
    expect(rules.layers).toEqual([
      { name: 'log', packages: ['base'] },
      { name: 'middle', packages: ['mid', 'side'] },
      { name: 'top', packages: ['app'] },
    ])
    expect(rules.narrow).toEqual([{ importer: 'side', imported: 'base', specifiers: ['@keel/base/types'] }])
  })

  it('finds every kind of @keel import with its line: type-only, re-export, dynamic, import() types, augmentation', () => {
    const text = [
      "import type { A } from '@keel/a'",
      "export { b } from '@keel/b/sub'",
      "const c: import('@keel/c').C = await import('@keel/d')",
      "declare module '@keel/e' {}",
      "import './local.ts'",
      "import 'cordis'",
    ].join('\n')
    expect(keelImports(text)).toEqual([
      { specifier: '@keel/a', line: 1 },
      { specifier: '@keel/b/sub', line: 2 },
      { specifier: '@keel/c', line: 3 },
      { specifier: '@keel/d', line: 3 },
      { specifier: '@keel/e', line: 4 },
    ])
  })

  it('passes a workspace that keeps the rules', () => {
    expect(checkLayering(workspace(clean() as unknown as Fixture), rules)).toEqual([])
  })

  it('names the file, line and import that reaches a layer above, including import type', () => {
    const fixture = clean() as unknown as Fixture
    fixture.mid = [
      { dependencies: { '@keel/base': '0.1.0', '@keel/app': '0.1.0' } },
      { 'src/index.ts': "import { x } from '@keel/base'\nimport type { Y } from '@keel/app'\n" },
    ]
    expect(checkLayering(workspace(fixture), rules)).toEqual([
      'packages/mid/package.json dependencies: @keel/app: mid (middle) may not import app (top)',
      'packages/mid/src/index.ts:2 imports @keel/app: mid (middle) may not import app (top)',
      'cycle app → mid → app: packages/app/package.json dependencies: @keel/mid; packages/mid/package.json dependencies: @keel/app',
    ])
  })

  it('names a cycle inside one layer with the imports that make it', () => {
    const fixture = clean() as unknown as Fixture
    fixture.mid = [
      { dependencies: { '@keel/base': '0.1.0' } },
      { 'src/index.ts': "import { x } from '@keel/base'\n", 'src/more.ts': "\nimport type { S } from '@keel/side'\n" },
    ]
    const problems = checkLayering(workspace(fixture), rules)
    expect(problems).toEqual([
      'packages/mid/src/more.ts:2 imports @keel/side, which packages/mid/package.json does not declare in dependencies',
      'cycle mid → side → mid: packages/mid/src/more.ts:2 imports @keel/side; packages/side/package.json dependencies: @keel/mid',
    ])
  })

  it('names files of one package that import each other in a loop, import type and import() included', () => {
    const fixture = clean() as unknown as Fixture
    fixture.base = [
      { exports: { '.': './src/index.ts', './types': './src/types.ts' } },
      {
        'src/index.ts': "export const x = 1\nconst load = () => import('./impl.ts')\n",
        'src/impl.ts': "import type { T } from './types.ts'\nimport { x } from './index.ts'\n",
        'src/types.ts': 'export type T = 1\n',
      },
    ]
    expect(checkLayering(workspace(fixture), rules)).toEqual([
      'files import each other in a loop, packages/base/src/impl.ts → packages/base/src/index.ts → packages/base/src/impl.ts: packages/base/src/impl.ts:2 imports ./index.ts; packages/base/src/index.ts:2 imports ./impl.ts',
    ])
  })

  it('names an undeclared import in src and in a test, and lets a test reach any layer when it declares it', () => {
    const fixture = clean() as unknown as Fixture
    fixture.base = [
      { devDependencies: { '@keel/app': '0.1.0' }, exports: { './types': './src/types.ts' } },
      {
        'src/index.ts': "import '@keel/mid'\n",
        'src/types.ts': 'export type T = 1\n',
        'tests/a.test.ts': "import { boot } from '@keel/app'\nimport { y } from '@keel/side'\n",
      },
    ]
    expect(checkLayering(workspace(fixture), rules)).toEqual([
      'packages/base/src/index.ts:1 imports @keel/mid, which packages/base/package.json does not declare in dependencies',
      'packages/base/src/index.ts:1 imports @keel/mid: base (log) may not import mid (middle)',
      'packages/base/tests/a.test.ts:2 imports @keel/side, which packages/base/package.json declares in neither dependencies nor devDependencies',
      'cycle mid → base → mid: packages/mid/package.json dependencies: @keel/base; packages/base/src/index.ts:1 imports @keel/mid',
    ])
  })

  it('holds a narrow import to its subpath', () => {
    const fixture = clean() as unknown as Fixture
    fixture.side = [
      { dependencies: { '@keel/base': '0.1.0', '@keel/mid': '0.1.0' } },
      { 'src/index.ts': "import { x } from '@keel/base'\n" },
    ]
    expect(checkLayering(workspace(fixture), rules)).toEqual([
      'packages/side/src/index.ts:1 imports @keel/base: side takes base only through @keel/base/types',
    ])
  })

  it('names a narrow subpath whose module graph reaches past its own files; its own files are fine', () => {
    const fixture = clean() as unknown as Fixture
    fixture.base = [
      { exports: { '.': './src/index.ts', './types': './src/types.ts' } },
      {
        'src/index.ts': 'export const x = 1\n',
        'src/types.ts': "import './shape.ts'\nexport type T = 1\n",
        'src/shape.ts': "import 'node:fs'\nimport '@keel/mid'\nexport type S = 1\n",
      },
    ]
    expect(checkLayering(workspace(fixture), rules)).toContainEqual(
      "packages/base/src/types.ts: @keel/base/types may import only its own package's files, but reaches node:fs, @keel/mid",
    )
    fixture.base[1]['src/shape.ts'] = 'export type S = 1\n'
    expect(checkLayering(workspace(fixture), rules)).toEqual([])
  })

  it('names a package the table leaves out and a table entry with no package', () => {
    const fixture = clean() as unknown as Fixture
    fixture.extra = [{}, { 'src/index.ts': 'export {}\n' }]
    expect(
      checkLayering(workspace(fixture), readRules(RULES.replace('`mid`, `side`', '`mid`, `side`, `gone`'))),
    ).toEqual([
      'docs/architecture.md: layer table names `gone`, which is not in packages/',
      'packages/extra: in no layer of the table in docs/architecture.md',
    ])
  })
})
