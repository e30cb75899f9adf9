// The bundle's sandbox runtime looks programs up in process (scripts/runtime-patches.mjs). A probe asking its
// `whichSync` what `which` is asked (a program on PATH, one missing, one whose first match is not executable or is a
// folder, a path with a slash, a missing path) is bundled twice, with and without the patch, and run with a `which`
// of the test's own first on PATH that notes each call: both must give the same answers, and only the unpatched one
// may spawn it. And the bridge's sockets are looked for in short steps, as long in all.
import { spawnSync } from 'node:child_process'
import { chmodSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { delimiter, join } from 'node:path'
import { build } from 'esbuild'
import { afterAll, expect, test } from 'vitest'
import { sandboxRuntimePatches } from '../runtime-patches.mjs'

const root = join(import.meta.dirname, '../..')
const scratch = join(root, '.keel-test', `runtime-patches-${process.pid}`)
const first = join(scratch, 'first')
const log = join(scratch, 'which.log')
mkdirSync(join(first, 'shadowed-by-a-folder'), { recursive: true })
afterAll(() => rmSync(scratch, { recursive: true, force: true }))

const realWhich = (process.env.PATH ?? '')
  .split(delimiter)
  .map((dir) => join(dir, 'which'))
  .find((path) => existsSync(path))!
writeFileSync(join(first, 'which'), `#!/bin/sh\necho "$@" >> '${log}'\nexec '${realWhich}' "$@"\n`)
chmodSync(join(first, 'which'), 0o755)
// Earlier on PATH than the real `sh`, but not executable: both must skip it.
writeFileSync(join(first, 'sh'), '#!/bin/sh\n')
chmodSync(join(first, 'sh'), 0o644)

const ASKED = ['sh', 'bash', 'keel-no-such-program', 'shadowed-by-a-folder', '/bin/sh', '/no/such/file', first]

/** Bundles `source` as `name`, with the patches or without, as CommonJS like the shipped bundle; the file. */
async function bundled(name: string, source: string, patched: boolean): Promise<string> {
  const entry = join(scratch, `${name}.mjs`)
  writeFileSync(entry, source)
  const outfile = join(scratch, `${name}-${patched ? 'patched' : 'plain'}.cjs`)
  await build({
    entryPoints: [entry],
    outfile,
    bundle: true,
    format: 'cjs',
    platform: 'node',
    target: 'node20',
    nodePaths: [join(root, 'node_modules')],
    logLevel: 'error',
    plugins: patched ? [sandboxRuntimePatches] : [],
  })
  return outfile
}

async function runProbe(patched: boolean): Promise<{ answers: unknown[]; spawned: string[] }> {
  const outfile = await bundled(
    'which',
    `import { whichSync } from '@anthropic-ai/sandbox-runtime/dist/utils/which.js'\n` +
      `console.log(JSON.stringify(${JSON.stringify(ASKED)}.map((bin) => whichSync(bin))))\n`,
    patched,
  )
  rmSync(log, { force: true })
  const run = spawnSync(process.execPath, [outfile], {
    encoding: 'utf8',
    env: { ...process.env, PATH: `${first}${delimiter}${process.env.PATH}` },
  })
  expect(run.status, run.stderr).toBe(0)
  const spawned = existsSync(log) ? readFileSync(log, 'utf8').trim().split('\n') : []
  return { answers: JSON.parse(run.stdout), spawned }
}

test('the patched runtime finds what `which` finds, without spawning it', async () => {
  const plain = await runProbe(false)
  const patched = await runProbe(true)
  expect(patched.answers).toEqual(plain.answers)
  // The probe reaches both answers: found (the real sh, past the unexecutable one) and not found.
  expect(plain.answers[0]).not.toBe(join(first, 'sh'))
  expect(plain.answers[0]).toMatch(/\/sh$/)
  expect(plain.answers[2]).toBeNull()
  expect(plain.spawned).toHaveLength(ASKED.length)
  expect(patched.spawned).toEqual([])
})

test("the patched runtime looks for its bridge's sockets every 5 ms, for as long in all", async () => {
  // A socat that never listens: both give up, after their own number of looks (0.6 s in all either way).
  const socat = join(scratch, 'socat-that-never-listens')
  writeFileSync(socat, '#!/bin/sh\nexec sleep 5\n')
  chmodSync(socat, 0o755)
  const source =
    `import { initializeLinuxNetworkBridge } from '@anthropic-ai/sandbox-runtime/dist/sandbox/linux-sandbox-utils.js'\n` +
    `initializeLinuxNetworkBridge(1, 1, process.argv[2]).then(() => console.log('ready'), (e) => console.log(e.message))\n`
  const said: string[] = []
  for (const patched of [false, true]) {
    const outfile = await bundled('bridge', source, patched)
    const run = spawnSync(process.execPath, [outfile, socat], { encoding: 'utf8', timeout: 20_000 })
    expect(run.status, run.stderr).toBe(0)
    said.push(run.stdout.trim())
  }
  expect(said).toEqual([
    'Failed to create bridge sockets after 5 attempts',
    'Failed to create bridge sockets after 121 attempts',
  ])
}, 60_000)

test('a runtime the patch no longer fits fails the build', async () => {
  const fake = join(scratch, 'node_modules/@anthropic-ai/sandbox-runtime')
  mkdirSync(join(fake, 'dist/utils'), { recursive: true })
  writeFileSync(join(fake, 'package.json'), JSON.stringify({ name: '@anthropic-ai/sandbox-runtime', type: 'module' }))
  writeFileSync(join(fake, 'dist/utils/which.js'), 'export function whichSync(bin) { return null }\n')
  const entry = join(scratch, 'uses-fake.mjs')
  writeFileSync(
    entry,
    `import { whichSync } from '@anthropic-ai/sandbox-runtime/dist/utils/which.js'\nconsole.log(whichSync)\n`,
  )
  await expect(
    build({
      entryPoints: [entry],
      outfile: join(scratch, 'fake-out.mjs'),
      bundle: true,
      format: 'esm',
      platform: 'node',
      logLevel: 'silent',
      plugins: [sandboxRuntimePatches],
    }),
  ).rejects.toThrow(/the sandbox runtime changed, this patch no longer applies/)
})
