// What each command loads: print mode must not parse a front door's dependencies (React, pi-tui, hono, the ACP
// SDK), the MCP SDK when no server is configured, the sandbox runtime before a sandboxed call, or a provider SDK
// it does not use; --version and --help load no more than the argument table. Runs bin/keel.js as users do (the
// bundle when it is fresh, the sources otherwise) and records every module file it loads: an ES module loader hook
// for the sources and node_modules, and for the bundle's chunks (which bin/keel.js compiles itself, with their code
// cache, through vm.Script) a preload that notes each script's file name.
import { spawn } from 'node:child_process'
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { afterAll, describe, expect, test } from 'vitest'
import { writeChunkRecorder } from '../../../test-support/chunk-recorder.ts'
import { startFakeProvider } from '../../../test-support/fake-provider.ts'

const root = join(import.meta.dirname, '../../..')
const scratch = mkdtempSync(join(tmpdir(), 'keel-modules-'))
afterAll(() => rmSync(scratch, { recursive: true, force: true }))
// The runs' cwd, beside their home: a cwd holding the home would snapshot the earlier runs' checkpoints too.
const work = join(scratch, 'work')
mkdirSync(work)

const hooks = join(scratch, 'hooks.mjs')
writeFileSync(
  hooks,
  `import { appendFileSync } from 'node:fs'
export async function load(url, context, next) {
  if (url.startsWith('file:')) appendFileSync(process.env.KEEL_MODULE_LIST, url + '\\n')
  return next(url, context)
}
`,
)
const chunks = writeChunkRecorder(scratch)
const register = join(scratch, 'register.mjs')
writeFileSync(
  register,
  `import { register } from 'node:module'\nregister(${JSON.stringify(pathToFileURL(hooks).href)})\n`,
)

/**
 * The module files a run of keel loaded, relative to the repository: `node_modules/hono/dist/index.js`,
 * `packages/web/src/...`, and `dist/bin.cjs` and its chunks when it ran the bundle. A bundle chunk names what it
 * holds in esbuild's `//! node_modules/<package>/…` and `//! packages/<name>/…` comments; a source file by its path.
 */
async function modulesLoaded(args: string[], env: Record<string, string> = {}): Promise<Set<string>> {
  const list = join(scratch, `modules-${Math.random().toString(36).slice(2)}.txt`)
  writeFileSync(list, '')
  const child = spawn(
    process.execPath,
    [`--require=${chunks}`, `--import=${pathToFileURL(register).href}`, join(root, 'bin/keel.js'), ...args],
    {
      cwd: work,
      env: { ...process.env, KEEL_HOME: join(scratch, 'home'), KEEL_MODULE_LIST: list, KEEL_CHUNK_LIST: list, ...env },
      stdio: 'ignore',
    },
  )
  const code = await new Promise((done) => child.on('close', done))
  expect(code).toBe(0)
  const found = new Set<string>()
  for (const line of readFileSync(list, 'utf8').split('\n').filter(Boolean)) {
    const path = fileURLToPath(line.split(' ')[0]!) // a chunk's line ends in ` cached` or ` compiled`
    found.add(path.slice(root.length).replace(/^\//, ''))
    if (!path.startsWith(join(root, 'dist'))) continue
    for (const match of readFileSync(path, 'utf8').matchAll(/^\/\/! ((?:node_modules|packages)\/\S+)$/gm))
      found.add(match[1]!)
  }
  return found
}

/** The packages behind module files: `hono`, `@keel/web`, ... */
function packagesOf(modules: Set<string>): Set<string> {
  const found = new Set<string>()
  for (const path of modules) {
    const dep = /node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(path)
    const own = /(?:^|\/)packages\/([^/]+)\//.exec(path)
    if (dep) found.add(dep[1]!)
    else if (own) found.add(`@keel/${own[1]}`)
  }
  return found
}

async function packagesLoaded(args: string[], env: Record<string, string> = {}): Promise<Set<string>> {
  return packagesOf(await modulesLoaded(args, env))
}

const FRONT_DOORS = [
  'react',
  'react-dom',
  '@mariozechner/pi-tui',
  'marked',
  'hono',
  '@hono/node-server',
  '@agentclientprotocol/sdk',
  '@keel/tui',
  '@keel/web',
  '@keel/acp',
]

describe('modules loaded', () => {
  test('keel -p with an OpenAI-compatible model loads its event-stream reader, not a front door, MCP, the sandbox runtime, the Anthropic SDK or all of TypeBox', async () => {
    const fake = await startFakeProvider([{ text: 'ok' }])
    try {
      const modules = await modulesLoaded([
        '-p',
        'hi',
        '--model',
        'openai-compatible/m',
        '--base-url',
        `${fake.url}/v1`,
      ])
      const loaded = packagesOf(modules)
      expect(loaded).toContain('eventsource-parser')
      expect(loaded).toContain('@keel/agent')
      for (const heavy of [
        ...FRONT_DOORS,
        '@modelcontextprotocol/sdk',
        'ajv',
        'zod',
        '@anthropic-ai/sandbox-runtime',
        '@anthropic-ai/sdk',
        'openai',
      ]) {
        expect(loaded, `keel -p loaded ${heavy}`).not.toContain(heavy)
      }
      // The global setup has built the bundle (or found it current), and no code file changed since: bin/keel.js
      // must run it (a freshness check that fails sends every run through tsx, about ten times slower to start).
      expect(modules.has('dist/bin.cjs'), 'bin/keel.js ran the sources, not the fresh bundle').toBe(true)
      // TypeBox by name, not its namespace (which keeps its TypeScript-syntax parser), and its JSON Schema engine
      // for tool arguments, not typebox/compile (which adds the whole Value module).
      const typebox = [...modules].filter((path) => path.includes('node_modules/typebox/'))
      expect(typebox.length).toBeGreaterThan(0)
      for (const part of ['build/type/script/parser', 'build/compile/', 'build/value/'])
        expect(
          typebox.filter((path) => path.includes(part)),
          `keel -p loaded typebox/${part}`,
        ).toEqual([])
    } finally {
      await fake.close()
    }
  }, 120_000)

  test('keel -p with the scripted model loads no provider SDK', async () => {
    const script = join(scratch, 'one.json')
    writeFileSync(script, JSON.stringify({ steps: [{ text: 'ok' }] }))
    const loaded = await packagesLoaded(['-p', 'hi', '--model', `scripted/${script}`])
    for (const heavy of [
      ...FRONT_DOORS,
      'eventsource-parser',
      '@anthropic-ai/sdk',
      'openai',
      '@modelcontextprotocol/sdk',
    ])
      expect(loaded, `loaded ${heavy}`).not.toContain(heavy)
  }, 120_000)

  test('keel -p --output-schema loads ajv (a plain keel -p does not, see above) and validates with it', async () => {
    const script = join(scratch, 'json.json')
    writeFileSync(script, JSON.stringify({ steps: [{ text: '{"ok":true}' }] }))
    const schema = join(scratch, 'ok.schema.json')
    writeFileSync(schema, JSON.stringify({ type: 'object', required: ['ok'] }))
    const loaded = await packagesLoaded(['-p', 'hi', '--model', `scripted/${script}`, '--output-schema', schema])
    expect(loaded).toContain('ajv')
  })

  test('keel -p with an openai/* model loads the openai SDK (its Responses adapter), not the Anthropic one', async () => {
    const fake = await startFakeProvider([{ text: 'ok' }])
    try {
      const loaded = await packagesLoaded(['-p', 'hi', '--model', 'openai/gpt-5.5', '--base-url', `${fake.url}/v1`], {
        OPENAI_API_KEY: 'k',
      })
      expect(loaded).toContain('openai')
      expect(loaded).not.toContain('@anthropic-ai/sdk')
    } finally {
      await fake.close()
    }
  }, 120_000)

  test('keel -p loads the shell parser for a command with shell syntax, not for plain commands', async () => {
    const script = (command: string) => {
      const file = join(scratch, `bash-${Math.random().toString(36).slice(2)}.json`)
      const steps = [{ toolCalls: [{ name: 'bash', arguments: { command } }] }, { text: 'ok' }]
      writeFileSync(file, JSON.stringify({ steps }))
      return `scripted/${file}`
    }
    expect(await packagesLoaded(['-p', 'hi', '--model', script('echo plain words')])).not.toContain('mvdan-sh')
    expect(await packagesLoaded(['-p', 'hi', '--model', script('echo piped | cat')])).toContain('mvdan-sh')
  }, 120_000)

  test('keel --version and --help load the argument table (and the text helpers it suggests with), not cordis or a plugin', async () => {
    // @keel/session/text (`closest`, for "did you mean") and what it imports; the session package's root entry would
    // bring cordis.
    const textEntry = [
      'packages/session/src/text.ts',
      'packages/session/src/escape.ts',
      'packages/session/src/outcome.ts',
    ]
    for (const flag of ['--version', '--help']) {
      const modules = [...(await modulesLoaded([flag]))].filter((path) => !textEntry.includes(path))
      expect(
        [...packagesOf(new Set(modules))].filter(
          (name) => name !== '@keel/cli' && name !== 'tsx' && name !== 'get-tsconfig' && name !== 'esbuild',
        ),
        flag,
      ).toEqual([])
    }
  }, 120_000)
})
