import { spawnSync } from 'node:child_process'
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync, existsSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { CATALOG_PATH, main, REPO_ROOT, renderCatalog, scanCatalog } from '../gen-cordis-catalog.ts'

const roots: string[] = []

/** Writes a source tree (path → lines) to a fresh temp dir and returns its root. */
function fixture(files: Record<string, string[]>): string {
  const root = mkdtempSync(join(tmpdir(), 'keel-catalog-'))
  roots.push(root)
  for (const [path, lines] of Object.entries(files)) write(root, path, lines)
  return root
}

function write(root: string, path: string, lines: string[]): void {
  mkdirSync(dirname(join(root, path)), { recursive: true })
  writeFileSync(join(root, path), lines.join('\n') + '\n')
}

function run(args: string[]): { code: number; out: string[]; err: string[] } {
  const out: string[] = []
  const err: string[] = []
  const code = main(args, { out: (l) => out.push(l), err: (l) => err.push(...l.split('\n')) })
  return { code, out, err }
}

/** A package whose only file declares one cordis event with the given JSDoc and signature (member on line 5). */
function eventTree(doc: string[], member: string): string {
  return fixture({
    'packages/demo/src/index.ts': [
      "declare module 'cordis' {", // 1
      '  interface Events {', // 2
      ...doc.map((l) => `    ${l}`), // 3..
      `    ${member}`,
      '  }',
      '}',
    ],
  })
}

afterEach(() => {
  for (const root of roots.splice(0)) rmSync(root, { recursive: true, force: true })
})

describe('validation', () => {
  it('a missing @mode fails with file:line and what to add, and writes nothing', () => {
    const root = eventTree(['/**', ' * Fires when the demo pings.', ' */'], "'demo/ping'(id: string): void")
    const { problems } = scanCatalog(root)
    expect(problems).toEqual([
      `packages/demo/src/index.ts:6: cordis event 'demo/ping' has no @mode tag — add "@mode <emit|parallel|serial|bail>" to its JSDoc, matching how it is dispatched`,
    ])
    const result = run(['--root', root])
    expect(result.code).toBe(1)
    expect(result.err[0]).toBe(problems[0])
    expect(result.err.at(-1)).toContain('1 problem in cordis declarations')
    expect(existsSync(join(root, CATALOG_PATH))).toBe(false)
    // --check reports the same problem rather than a stale file.
    expect(run(['--check', '--root', root]).err[0]).toBe(problems[0])
  })

  it('a member with no JSDoc at all fails and says what to add', () => {
    const root = eventTree([], "'demo/ping'(): void")
    expect(scanCatalog(root).problems).toEqual([
      `packages/demo/src/index.ts:3: cordis event 'demo/ping' has no JSDoc — add /** <what it means and when it fires> @mode <emit|parallel|serial|bail|waterfall> */ above it`,
    ])
  })

  it('a tag without a description fails', () => {
    const root = eventTree(['/** @mode emit */'], "'demo/ping'(): void")
    expect(scanCatalog(root).problems).toEqual([
      `packages/demo/src/index.ts:4: cordis event 'demo/ping' has no description — add a sentence saying what it means and when it fires to its JSDoc, before the @mode tag`,
    ])
  })

  it('an unknown or duplicated @mode fails', () => {
    const unknown = eventTree(['/**', ' * Pings.', ' * @mode broadcast', ' */'], "'demo/ping'(): void")
    expect(scanCatalog(unknown).problems).toEqual([
      `packages/demo/src/index.ts:7: cordis event 'demo/ping' has unknown @mode 'broadcast' — use exactly one of emit|parallel|serial|bail|waterfall`,
    ])
    const twice = eventTree(['/**', ' * Pings.', ' * @mode emit', ' * @mode serial', ' */'], "'demo/ping'(): void")
    expect(scanCatalog(twice).problems).toEqual([
      `packages/demo/src/index.ts:8: cordis event 'demo/ping' has 2 @mode tags — keep exactly one`,
    ])
  })

  it('waterfall without a trailing next fails', () => {
    const root = eventTree(
      ['/**', ' * Rewrites the prompt.', ' * @mode waterfall', ' */'],
      "'demo/prompt'(text: string): string",
    )
    expect(scanCatalog(root).problems).toEqual([
      `packages/demo/src/index.ts:7: cordis event 'demo/prompt' is @mode waterfall but its signature has no trailing 'next' parameter — add 'next: (…) => …' as the last parameter, or change the @mode`,
    ])
    // `next` somewhere other than last is still wrong.
    const early = eventTree(
      ['/**', ' * Rewrites.', ' * @mode waterfall', ' */'],
      "'demo/prompt'(next: () => string, text: string): string",
    )
    expect(scanCatalog(early).problems).toHaveLength(1)
    expect(scanCatalog(early).problems[0]).toContain("has no trailing 'next' parameter")
  })

  it('next without waterfall fails', () => {
    const root = eventTree(
      ['/**', ' * Rewrites the prompt.', ' * @mode serial', ' */'],
      "'demo/prompt'(text: string, next: () => Promise<string>): Promise<string>",
    )
    expect(scanCatalog(root).problems).toEqual([
      `packages/demo/src/index.ts:7: cordis event 'demo/prompt' takes a 'next' parameter but is @mode serial — only waterfall events take 'next': tag it "@mode waterfall" or drop the parameter`,
    ])
    // The missing-tag hint points at waterfall when the signature already ends in next.
    const untagged = eventTree(
      ['/** Rewrites the prompt. */'],
      "'demo/prompt'(text: string, next: () => string): string",
    )
    expect(scanCatalog(untagged).problems[0]).toContain('add "@mode waterfall"')
  })

  it('waterfall with a trailing next passes, also as a function-typed property', () => {
    const root = eventTree(
      ['/**', ' * Rewrites the prompt.', ' * @mode waterfall', ' */'],
      "'demo/prompt': (text: string, next: (text: string) => string) => string",
    )
    const catalog = scanCatalog(root)
    expect(catalog.problems).toEqual([])
    expect(catalog.events[0]).toMatchObject({
      name: 'demo/prompt',
      mode: 'waterfall',
      signature: '(text: string, next: (text: string) => string): string',
      line: 7,
    })
  })

  it('a literal dispatch with another method than the tag fails at the call site', () => {
    const root = fixture({
      'packages/demo/src/index.ts': [
        "declare module 'cordis' {",
        '  interface Events {',
        '    /**',
        '     * Before a request; awaited.',
        '     * @mode parallel',
        '     */',
        "    'demo/prepare'(id: string): Promise<void>",
        '  }',
        '}',
        'export async function go(ctx: any) {',
        "  await ctx.parallel('demo/prepare', 'a')",
        "  ctx.emit('demo/prepare', 'b')",
        "  ctx.emit(ctx, 'demo/prepare', 'c')",
        "  ctx.emit('other/thing')",
        '}',
      ],
    })
    expect(scanCatalog(root).problems).toEqual([
      `packages/demo/src/index.ts:12: cordis event 'demo/prepare' is dispatched with .emit() but packages/demo/src/index.ts:7 tags it @mode parallel — dispatch it with .parallel() or change the tag to "@mode emit"`,
      `packages/demo/src/index.ts:13: cordis event 'demo/prepare' is dispatched with .emit() but packages/demo/src/index.ts:7 tags it @mode parallel — dispatch it with .parallel() or change the tag to "@mode emit"`,
    ])
  })

  it('reports one line per problem across files', () => {
    const root = fixture({
      'packages/a/src/index.ts': [
        "declare module 'cordis' {",
        '  interface Events {',
        "    'a/one'(): void",
        '    /** Two. */',
        "    'a/two'(): void",
        '  }',
        '}',
      ],
      'packages/b/src/deep/events.ts': [
        "declare module 'cordis' {",
        '  interface Events {',
        '    /** Three. @mode waterfall */',
        "    'b/three'(x: number): void",
        '  }',
        '}',
      ],
    })
    const problems = scanCatalog(root).problems
    expect(problems.map((p) => p.slice(0, p.indexOf(': ')))).toEqual([
      'packages/a/src/index.ts:3',
      'packages/a/src/index.ts:5',
      'packages/b/src/deep/events.ts:4',
    ])
  })
})

const VALID_TREE: Record<string, string[]> = {
  'packages/alpha/src/index.ts': [
    "import { Context, Service } from 'cordis'",
    "import { Helper } from './helper.ts'",
    '',
    "declare module 'cordis' {",
    '  interface Context {',
    '    alpha: AlphaService',
    '    beta: BetaThing',
    '  }',
    '  interface Events {',
    '    /**',
    '     * Something happened',
    '     * to alpha.',
    '     * @mode emit',
    '     */',
    "    'alpha/changed'(value: string | number): void",
    '    /**',
    '     * First listener with an answer wins.',
    '     * @mode bail',
    '     */',
    "    'alpha/ask'(question: string): string | undefined",
    '    /**',
    '     * Listeners may rewrite the text.',
    '     * @mode waterfall',
    '     */',
    "    'alpha/rewrite'(text: string, next: (text: string) => Promise<string>): Promise<string>",
    '    /**',
    '     * A prefix-less event.',
    '     * @mode serial',
    '     */',
    '    ready(): Promise<void>',
    '  }',
    '}',
    '',
    '/** `ctx.alpha`: the alpha service. */',
    'export class AlphaService extends Service {',
    '  #hidden = 1',
    '  constructor(ctx: Context, readonly size = 2) {',
    "    super(ctx, 'alpha', true)",
    '  }',
    '  /** Looks a thing up.',
    '   *',
    '   * Second paragraph is not shown. */',
    '  lookup(id: string, fallback = 0): number { return fallback }',
    '  at(index: number): string',
    '  at(key: string): string',
    '  at(x: unknown): string { return String(x) }',
    '  async load<T>(path: string): Promise<T> { return undefined as T }',
    '  private secret(): void {}',
    '  protected guarded(): void {}',
    '  static create(): void {}',
    '  #really(): void {}',
    '  /** @internal */',
    '  plumbing(): void {}',
    '}',
  ],
  'packages/alpha/src/beta.ts': [
    '/** A plain interface service. */',
    'export interface BetaThing {',
    '  count(): number',
    '  label: string',
    '}',
  ],
  'packages/alpha/src/helper.ts': ['export class Helper {}'],
  'packages/gamma/src/index.ts': [
    "declare module 'cordis' {",
    '  interface Events {',
    '    /**',
    '     * Gamma woke up.',
    '     * @mode parallel',
    '     */',
    "    'gamma/wake'(): Promise<void>",
    '  }',
    '  interface Context {',
    '    gamma: GammaService',
    '  }',
    '}',
    '/** The `AlphaService` name in another package must not be picked up for gamma. */',
    'export class AlphaService { nope(): void {} }',
  ],
  // Not scanned: outside packages/*/src, tests, node_modules.
  'packages/gamma/tests/x.test.ts': ["declare module 'cordis' { interface Events { 'gamma/test'(): void } }"],
  'packages/gamma/src/node_modules/dep/index.ts': ["declare module 'cordis' { interface Events { 'dep/x'(): void } }"],
  'scripts/other.ts': ["declare module 'cordis' { interface Events { 'script/x'(): void } }"],
}

const EXPECTED_BODY = `## Events

### \`alpha/*\`

| Event | Mode | Signature | Description | Source |
|---|---|---|---|---|
| \`alpha/ask\` | bail | \`(question: string): string \\| undefined\` | First listener with an answer wins. | \`packages/alpha/src/index.ts:20\` |
| \`alpha/changed\` | emit | \`(value: string \\| number): void\` | Something happened to alpha. | \`packages/alpha/src/index.ts:15\` |
| \`alpha/rewrite\` | waterfall | \`(text: string, next: (text: string) => Promise<string>): Promise<string>\` | Listeners may rewrite the text. | \`packages/alpha/src/index.ts:25\` |

### \`gamma/*\`

| Event | Mode | Signature | Description | Source |
|---|---|---|---|---|
| \`gamma/wake\` | parallel | \`(): Promise<void>\` | Gamma woke up. | \`packages/gamma/src/index.ts:7\` |

### No prefix

| Event | Mode | Signature | Description | Source |
|---|---|---|---|---|
| \`ready\` | serial | \`(): Promise<void>\` | A prefix-less event. | \`packages/alpha/src/index.ts:30\` |

## Session log event types

Members of \`SessionEventMap\` in \`packages/*/src\`: what a session log can hold. "Surface" marks the types that become
model-visible messages (\`SurfaceEventType\`); every other type is log-only.

_No session log event types are declared._

## Services

| ctx key | Type | Declared | Public methods |
|---|---|---|---|
| \`ctx.alpha\` | \`AlphaService\` | \`packages/alpha/src/index.ts:6\` | 4 |
| \`ctx.beta\` | \`BetaThing\` | \`packages/alpha/src/index.ts:7\` | 1 |
| \`ctx.gamma\` | \`GammaService\` | \`packages/gamma/src/index.ts:10\` | — |

### \`ctx.alpha\`: \`AlphaService\`

\`ctx.alpha\`: the alpha service.

Key declared at \`packages/alpha/src/index.ts:6\`; class \`AlphaService\` at \`packages/alpha/src/index.ts:35\`.

- \`lookup(id: string, fallback?): number\` — Looks a thing up.
- \`at(index: number): string\`
- \`at(key: string): string\`
- \`load<T>(path: string): Promise<T>\`

### \`ctx.beta\`: \`BetaThing\`

A plain interface service.

Key declared at \`packages/alpha/src/index.ts:7\`; interface \`BetaThing\` at \`packages/alpha/src/beta.ts:2\`.

- \`count(): number\`

### \`ctx.gamma\`: \`GammaService\`

Key declared at \`packages/gamma/src/index.ts:10\`; no class or interface of that name in the same package.
`

describe('rendering', () => {
  it('a valid tree renders the expected Markdown', () => {
    const root = fixture(VALID_TREE)
    const catalog = scanCatalog(root)
    expect(catalog.problems).toEqual([])
    const markdown = renderCatalog(catalog)
    expect(markdown.startsWith('# Cordis catalog\n')).toBe(true)
    expect(markdown).toContain('5 events, 3 services.')
    expect(markdown).toContain('## How this file is generated')
    expect(markdown.indexOf('## How this file is generated')).toBeLessThan(markdown.indexOf('## Events'))
    expect(markdown.slice(markdown.indexOf('## Events'))).toBe(EXPECTED_BODY)

    expect(run(['--root', root])).toMatchObject({
      code: 0,
      out: ['wrote docs/cordis-catalog.md (5 events, 3 services, 0 session log event types from 4 files).'],
    })
    expect(readFileSync(join(root, CATALOG_PATH), 'utf8')).toBe(markdown)
    expect(run(['--root', root]).out[0]).toContain('already up to date')
  })

  it('is deterministic and independent of declaration order across files', () => {
    const a = fixture(VALID_TREE)
    const reordered = Object.fromEntries(Object.entries(VALID_TREE).reverse())
    const b = fixture(reordered)
    expect(renderCatalog(scanCatalog(a))).toBe(renderCatalog(scanCatalog(b)))
    expect(renderCatalog(scanCatalog(a))).toBe(renderCatalog(scanCatalog(a)))
  })

  it('SessionEventMap members are listed as session log event types, not as cordis events, and need no @mode', () => {
    const root = fixture({
      'packages/session/package.json': ['{ "name": "@keel/session" }'],
      'packages/session/src/types.ts': [
        'export interface SessionEventMap {',
        "  'turn/start': { turn: number }",
        "  'user/message': { message: UserMessage }",
        '}',
        "export type SurfaceEventType = 'user/message' | 'assistant/message'",
      ],
      'packages/todo/package.json': ['{ "name": "@keel/todo" }'],
      'packages/todo/src/index.ts': [
        "import type { Context } from 'cordis'",
        "declare module '@keel/session' {",
        '  interface SessionEventMap {',
        '    /** The whole todo list, replacing the previous one. */',
        "    'todo/write': { todos: { content: string; status: 'pending' | 'in_progress' | 'completed' }[] }",
        '  }',
        '}',
        "declare module 'cordis' {",
        '  interface Events {',
        '    /**',
        '     * A real cordis event next to it, so the catalog is not empty.',
        '     * @mode emit',
        '     */',
        "    'todo/changed'(count: number): void",
        '  }',
        '}',
        'export function apply(ctx: Context) {',
        "  ctx.emit('session/event' as any, { type: 'todo/write' })",
        '}',
      ],
    })
    const catalog = scanCatalog(root)
    expect(catalog.problems).toEqual([])
    expect(catalog.events.map((e) => e.name)).toEqual(['todo/changed'])
    expect(catalog.logEvents.map(({ name, pkg, surface, line }) => ({ name, pkg, surface, line }))).toEqual([
      { name: 'turn/start', pkg: '@keel/session', surface: false, line: 2 },
      { name: 'user/message', pkg: '@keel/session', surface: true, line: 3 },
      { name: 'todo/write', pkg: '@keel/todo', surface: false, line: 5 },
    ])
    const markdown = renderCatalog(catalog)
    const section = (heading: string) => {
      const start = markdown.indexOf(`${heading}\n`)
      return markdown
        .slice(start, markdown.indexOf('\n## ', start + 1))
        .split('\n')
        .filter((l) => l.startsWith('| `'))
    }
    expect(section('## Events')).toEqual([expect.stringMatching(/^\| `todo\/changed` \| emit \|/)])
    expect(section('## Session log event types')).toEqual([
      '| `turn/start` | `@keel/session` | no | `{ turn: number }` |  | `packages/session/src/types.ts:2` |',
      '| `user/message` | `@keel/session` | yes | `{ message: UserMessage }` |  | `packages/session/src/types.ts:3` |',
      "| `todo/write` | `@keel/todo` | no | `{ todos: { content: string; status: 'pending' \\| 'in_progress' \\| 'completed' }[] }` | The whole todo list, replacing the previous one. | `packages/todo/src/index.ts:5` |",
    ])
  })
})

describe('--check', () => {
  it('passes when fresh; when stale, names the file, the events that differ and the fix', () => {
    const root = fixture(VALID_TREE)
    expect(run(['--check', '--root', root]).err).toEqual([
      `docs/cordis-catalog.md is missing. Fix: run \`npm run catalog -- --root ${root}\` and commit docs/cordis-catalog.md.`,
    ])
    expect(run(['--root', root]).code).toBe(0)
    expect(run(['--check', '--root', root])).toMatchObject({
      code: 0,
      out: ['docs/cordis-catalog.md is up to date (5 events, 3 services, 0 session log event types from 4 files).'],
    })

    // Another engineer adds an event and changes a description without regenerating.
    const gamma = VALID_TREE['packages/gamma/src/index.ts']
    write(root, 'packages/gamma/src/index.ts', [
      ...gamma.slice(0, 3),
      '     * Gamma woke up again.',
      ...gamma.slice(4, 7),
      '    /**',
      '     * Gamma fell asleep.',
      '     * @mode emit',
      '     */',
      "    'gamma/sleep'(): void",
      ...gamma.slice(7),
    ])
    const stale = run(['--check', '--root', root])
    expect(stale.code).toBe(1)
    expect(stale.out).toEqual([])
    expect(stale.err).toEqual([
      'docs/cordis-catalog.md is stale: it does not match the cordis declarations in packages/*/src.',
      '  missing from the file: event gamma/sleep',
      '  changed:               event gamma/wake',
      `Fix: run \`npm run catalog -- --root ${root}\` and commit docs/cordis-catalog.md.`,
    ])

    // A hand edit outside any row is reported by its first differing line.
    expect(run(['--root', root]).code).toBe(0)
    const path = join(root, CATALOG_PATH)
    writeFileSync(path, readFileSync(path, 'utf8').replace('## Services', '## Servicez'))
    const edited = run(['--check', '--root', root])
    expect(edited.code).toBe(1)
    expect(edited.err.slice(1, 4)).toEqual([
      expect.stringMatching(/^ {2}first difference at line \d+:$/),
      '    committed: ## Servicez',
      '    generated: ## Services',
    ])

    // CRLF checkouts are not stale.
    expect(run(['--root', root]).code).toBe(0)
    writeFileSync(path, readFileSync(path, 'utf8').replace(/\n/g, '\r\n'))
    expect(run(['--check', '--root', root]).code).toBe(0)
  })

  it('rejects unknown arguments and a root without packages/', () => {
    expect(run(['--frobnicate']).code).toBe(2)
    const empty = fixture({ 'README.md': ['nothing'] })
    const result = run(['--check', '--root', empty])
    expect(result.code).toBe(2)
    expect(result.err[0]).toContain('no packages/ directory')
  })
})

describe('the real tree', () => {
  it('declares only valid events, and docs/cordis-catalog.md is up to date (in-process)', () => {
    const catalog = scanCatalog(REPO_ROOT)
    expect(catalog.problems).toEqual([])
    expect(catalog.events.map((e) => e.name)).not.toContain('todo/write')
    // Every session log event type is listed with the package that declares it; the surface is exactly three types.
    expect(catalog.logEvents.find((e) => e.name === 'todo/write')).toMatchObject({ pkg: '@keel/todo', surface: false })
    expect(
      catalog.logEvents
        .filter((e) => e.surface)
        .map((e) => e.name)
        .sort(),
    ).toEqual(['assistant/message', 'tool/result', 'user/message'])
    expect(catalog.services.map((s) => s.key)).toEqual(
      expect.arrayContaining(['sessions', 'projections', 'invariants', 'llm', 'tools', 'agents']),
    )
    // What `--check` compares, from this scan (a second scan of the tree would cost as much again); the CLI test
    // below runs `--check` itself.
    const committed = readFileSync(join(REPO_ROOT, CATALOG_PATH), 'utf8').replace(/\r\n/g, '\n')
    expect(renderCatalog(catalog) === committed, `${CATALOG_PATH} is stale: run \`npm run catalog\``).toBe(true)
  })

  it('`--check` passes through the real CLI', () => {
    const child = spawnSync(process.execPath, ['--import', 'tsx', 'scripts/gen-cordis-catalog.ts', '--check'], {
      cwd: REPO_ROOT,
      encoding: 'utf8',
    })
    expect(child.stderr).toBe('')
    expect(child.status).toBe(0)
    expect(child.stdout).toMatch(
      /^docs\/cordis-catalog\.md is up to date \(\d+ events, \d+ services, \d+ session log event types from \d+ files\)\.\n$/,
    )
  })
})
