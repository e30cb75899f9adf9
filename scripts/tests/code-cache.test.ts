// The bundle's code cache: the build leaves bytecode V8 accepts for every chunk a print run compiles, and a chunk
// whose cache is missing is compiled as usual and has one from the next run on. Runs a copy of dist/ (inside the
// checkout, so the shipped files are found by walking up) through bin/bundle-loader.js, with a preload that notes,
// for each chunk compiled, whether V8 took its cached bytecode.
import { execFileSync, spawnSync } from 'node:child_process'
import {
  cpSync,
  existsSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs'
import { basename, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, expect, test } from 'vitest'
import { writeChunkRecorder } from '../../test-support/chunk-recorder.ts'

const root = join(import.meta.dirname, '../..')
const scratch = join(root, '.keel-test', `code-cache-${process.pid}`)
const dist = join(scratch, 'dist')
mkdirSync(scratch, { recursive: true })
cpSync(join(root, 'dist'), dist, { recursive: true })
afterAll(() => rmSync(scratch, { recursive: true, force: true }))

const recorder = writeChunkRecorder(scratch)
const script = join(scratch, 'one.json')
writeFileSync(script, JSON.stringify({ steps: [{ text: 'ok' }] }))

/** Runs `keel -p hi` from the copy; returns each chunk compiled and whether it came from the cache. */
function printRun(name: string): Map<string, 'cached' | 'compiled'> {
  const record = join(scratch, `${name}.txt`)
  writeFileSync(record, '')
  const run = `require(${JSON.stringify(join(root, 'bin/bundle-loader.js'))}).loadBundle(${JSON.stringify(dist)})
    .main(['-p', 'hi', '--model', ${JSON.stringify(`scripted/${script}`)}]).then((code) => { process.exitCode = code })`
  const result = spawnSync(process.execPath, ['--require', recorder, '-e', run], {
    cwd: scratch,
    env: { ...process.env, KEEL_HOME: join(scratch, 'home'), KEEL_CHUNK_LIST: record },
    encoding: 'utf8',
    // A start that blocks on a cache file fails here instead of stalling the run.
    timeout: 60_000,
  })
  expect(result.status, result.stderr).toBe(0)
  expect(result.stdout).toBe('ok\n')
  return new Map(
    readFileSync(record, 'utf8')
      .trim()
      .split('\n')
      .map((line) => {
        const [url, how] = line.split(' ') as [string, 'cached' | 'compiled']
        return [basename(fileURLToPath(url)), how]
      }),
  )
}

test('a print run after the build compiles no chunk: each one comes from the cache the build left', () => {
  const chunks = printRun('after-build')
  expect(chunks.get('bin.cjs')).toBe('cached')
  expect(chunks.size).toBeGreaterThan(10)
  expect([...chunks].filter(([, how]) => how === 'compiled')).toEqual([])
})

test('a chunk without a cache is compiled, written on exit, and read from the cache by the next run', () => {
  const main = readdirSync(join(dist, 'code-cache')).find((name) => name.startsWith('main-'))!
  rmSync(join(dist, 'code-cache', main))
  expect(printRun('missing').get(main)).toBe('compiled')
  expect(existsSync(join(dist, 'code-cache', main))).toBe(true)
  const next = printRun('refilled')
  expect(next.get(main)).toBe('cached')
  expect([...next].filter(([, how]) => how === 'compiled')).toEqual([])
})

test('a FIFO or a link to /dev/zero where a cache file belongs is passed over, not read, and replaced on exit', () => {
  const names = readdirSync(join(dist, 'code-cache'))
  const main = names.find((name) => name.startsWith('main-'))!
  const other = names.find((name) => name.startsWith('chunk-'))!
  rmSync(join(dist, 'code-cache', main))
  execFileSync('mkfifo', [join(dist, 'code-cache', main)])
  rmSync(join(dist, 'code-cache', other))
  symlinkSync('/dev/zero', join(dist, 'code-cache', other))
  const chunks = printRun('special-files')
  expect(chunks.get(main)).toBe('compiled')
  expect(chunks.get(other)).toBe('compiled')
  expect(lstatSync(join(dist, 'code-cache', main)).isFile()).toBe(true)
  expect(lstatSync(join(dist, 'code-cache', other)).isFile()).toBe(true)
  expect(printRun('after-special-files').get(main)).toBe('cached')
})
