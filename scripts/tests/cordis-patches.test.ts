// The bundle's cordis is patched for speed (scripts/cordis-patches.mjs). A probe exercising what the patches touch
// (events with and without listeners, internal/event, the warning for an undeclared service, names) is bundled twice,
// with and without them; both must print the same record, and only the patched one leaves node:tty unloaded.
import { spawnSync } from 'node:child_process'
import { mkdirSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { build } from 'esbuild'
import { afterAll, expect, test } from 'vitest'
import { cordisPatches } from '../cordis-patches.mjs'

const root = join(import.meta.dirname, '../..')
const scratch = join(root, '.keel-test', `cordis-patches-${process.pid}`)
mkdirSync(scratch, { recursive: true })
afterAll(() => rmSync(scratch, { recursive: true, force: true }))

const PROBE = `
import { Context, Service } from 'cordis'
async function probe() {
const record = []
const ctx = new Context()
ctx.on('internal/warning', (warning) => {
  const frames = warning.stack.split('\\n')
  record.push(['warning', warning.message, frames[1].includes('probeCaller')])
})
class Store extends Service {
  constructor(ctx) { super(ctx, 'store', true) }
  value() { return 42 }
}
ctx.plugin(Store)
await ctx.start()
record.push(['emit, nobody listening', ctx.emit('nobody/listens', 1)])
record.push(['bail, nobody listening', ctx.bail('nobody/listens', 1)])
record.push(['serial, nobody listening', await ctx.serial('nobody/listens', 1)])
await ctx.parallel('nobody/listens', 1)
ctx.on('probe/event', (n) => record.push(['listener', n]))
ctx.on('probe/bail', (n) => n > 1 ? 'big' : undefined)
ctx.emit('probe/event', 7)
record.push(['bail', ctx.bail('probe/bail', 1), ctx.bail('probe/bail', 2)])
const seen = []
const dispose = ctx.on('internal/event', (type, name) => { if (name.startsWith('probe/') || name.startsWith('nobody/')) seen.push(type + ' ' + name) })
ctx.emit('nobody/listens', 2)
ctx.emit('probe/event', 8)
ctx.bail('probe/bail', 3)
dispose()
record.push(['internal/event saw', seen])
ctx.plugin({
  name: 'uses-undeclared',
  apply(inner) {
    function probeCaller() { return inner.store.value() }
    record.push(['undeclared read', probeCaller()])
  },
})
ctx.plugin({
  name: 'declares',
  inject: ['store'],
  apply(inner) { record.push(['declared read', inner.store.value()]) },
})
await ctx.lifecycle.flush()
record.push(['names', Context.name, Service.name, Store.name])
console.log(JSON.stringify({ record, tty: process.moduleLoadList.includes('NativeModule tty') }))
}
probe()
`

async function runProbe(patched: boolean): Promise<{ record: unknown; tty: boolean }> {
  const entry = join(scratch, 'probe.mjs')
  writeFileSync(entry, PROBE)
  // CommonJS, as the shipped bundle: reggol requires Node's built-ins.
  const outfile = join(scratch, patched ? 'patched.cjs' : 'plain.cjs')
  await build({
    entryPoints: [entry],
    outfile,
    bundle: true,
    format: 'cjs',
    platform: 'node',
    target: 'node20',
    nodePaths: [join(root, 'node_modules')],
    logLevel: 'error',
    plugins: patched ? [cordisPatches] : [],
  })
  const run = spawnSync(process.execPath, [outfile], { encoding: 'utf8' })
  expect(run.status, run.stderr).toBe(0)
  // cordis's own logger prints the warnings too; the record is the last line.
  return JSON.parse(run.stdout.trim().split('\n').at(-1)!)
}

test('the patched cordis behaves as the published one', async () => {
  const plain = await runProbe(false)
  const patched = await runProbe(true)
  expect(patched.record).toEqual(plain.record)
  // The probe reaches every patched path: an undeclared read warns (once per read, naming the caller's frame).
  expect(JSON.stringify(plain.record)).toContain('"warning","property store is not registered')
  expect(JSON.stringify(plain.record)).toContain(
    '"internal/event saw",["emit nobody/listens","emit probe/event","bail probe/bail"]',
  )
  // The logger no longer asks supports-color, which loads node:tty.
  expect(plain.tty).toBe(true)
  expect(patched.tty).toBe(false)
})

test('a cordis the patches no longer fit fails the build', async () => {
  const fake = join(scratch, 'node_modules/@cordisjs/core')
  mkdirSync(join(fake, 'lib'), { recursive: true })
  writeFileSync(join(fake, 'package.json'), JSON.stringify({ name: '@cordisjs/core', module: 'lib/index.mjs' }))
  writeFileSync(join(fake, 'lib/index.mjs'), 'export const Context = class {}\n')
  const entry = join(scratch, 'uses-fake.mjs')
  writeFileSync(entry, `import { Context } from '@cordisjs/core'\nconsole.log(Context)\n`)
  await expect(
    build({
      entryPoints: [entry],
      outfile: join(scratch, 'fake-out.mjs'),
      bundle: true,
      format: 'esm',
      platform: 'node',
      logLevel: 'silent',
      plugins: [cordisPatches],
    }),
  ).rejects.toThrow(/cordis changed, this patch no longer applies/)
})
