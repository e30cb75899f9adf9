// The published package, end to end: `npm pack` the checkout, install the tarball into a temporary prefix (offline:
// the package has no dependencies to fetch), and run the installed `keel` from a folder outside the checkout,
// including a command in its sandbox (the runtime is bundled; bubblewrap is the system's).
import { execFileSync, spawn, spawnSync } from 'node:child_process'
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  writeFileSync,
} from 'node:fs'
import { homedir, tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, expect, test } from 'vitest'
import { HAS_POSTGRES, startPostgres } from '../../test-support/postgres.ts'
import { HAS_BWRAP, skipWithout } from '../../test-support/system-tools.ts'

const root = join(import.meta.dirname, '../..')
const scratch = mkdtempSync(join(tmpdir(), 'keel-install-'))
afterAll(() => rmSync(scratch, { recursive: true, force: true }))

const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm'

test('npm pack makes a tarball that installs with npm install -g and runs without the checkout', async () => {
  const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'))
  expect(pkg.private, 'a private package cannot be published').toBeUndefined()
  // global-setup has just built dist/ and the web client, which is what `prepare` would do again.
  execFileSync(npm, ['pack', '--ignore-scripts', '--pack-destination', scratch], { cwd: root, stdio: 'pipe' })
  const tarball = join(scratch, readdirSync(scratch).find((name) => name.endsWith('.tgz'))!)
  const prefix = join(scratch, 'prefix')
  execFileSync(
    npm,
    [
      'install',
      '-g',
      '--prefix',
      prefix,
      '--offline',
      '--no-audit',
      '--no-fund',
      '--cache',
      join(scratch, 'cache'),
      tarball,
    ],
    { cwd: scratch, stdio: 'pipe' },
  )
  const installed = join(prefix, 'lib/node_modules/keel')
  expect(readdirSync(installed)).not.toContain('node_modules')
  const elsewhere = join(scratch, 'elsewhere')
  mkdirSync(elsewhere)
  const keel = join(prefix, 'bin/keel')
  const env = { ...process.env, KEEL_HOME: join(scratch, 'home'), KEEL_FROM_SOURCE: '', NODE_PATH: '' }

  const version = spawnSync(keel, ['--version'], { cwd: elsewhere, env, encoding: 'utf8' })
  expect(version.stdout, version.stderr).toBe(`keel ${pkg.version}\n`)

  const print = spawnSync(keel, ['-p', 'hello', '--model', 'scripted/demo', '--output-format', 'json'], {
    cwd: elsewhere,
    env,
    encoding: 'utf8',
  })
  expect(print.status, print.stderr).toBe(0)
  expect(JSON.parse(print.stdout)).toMatchObject({ reason: 'completed', model: 'scripted/demo' })

  // A command in auto mode runs in the sandbox, which a global install must carry itself (it has no node_modules):
  // it runs at all, cannot write outside its folder, and the seccomp helper the runtime finds beside the bundle
  // refuses a Unix socket (EPERM; without the filter, connecting to a missing socket says ENOENT).
  if (!skipWithout('bubblewrap', HAS_BWRAP, 'the installed sandbox')) {
    // A file outside the cwd and the temp dir (both writable in the sandbox): in the home folder, or else the checkout,
    // whichever is not itself under the temp dir (a CI clone usually is).
    const tmp = realpathSync(tmpdir())
    const outsideDir = [homedir(), root].map((dir) => realpathSync(dir)).find((dir) => !`${dir}/`.startsWith(`${tmp}/`))
    const outside = outsideDir && join(outsideDir, `.keel-install-probe-${process.pid}`)
    const probe = `require('net').createConnection('/nonexistent.sock').on('error', (e) => console.log('unix:', e.code))`
    const steps = [
      { toolCalls: [{ name: 'bash', arguments: { command: `echo no > ${outside ?? '/'}; echo wrote $?` } }] },
      { toolCalls: [{ name: 'bash', arguments: { command: `${process.execPath} -e "${probe}"` } }] },
      { text: 'checked' },
    ]
    writeFileSync(join(elsewhere, 'sandbox.json'), JSON.stringify({ steps }))
    // The runtime looks for a vendor file it lacks beside the bundle in a global npm install, by running
    // `npm root -g` (a second Node process before the first command): an `npm` first on PATH records any call.
    const fakeBin = join(scratch, 'fake-bin')
    const npmCalls = join(scratch, 'npm-calls')
    mkdirSync(fakeBin)
    writeFileSync(join(fakeBin, 'npm'), `#!/bin/sh\necho "npm $*" >> '${npmCalls}'\nexit 1\n`, { mode: 0o755 })
    const sandboxed = spawnSync(
      keel,
      ['-p', 'go', '--model', 'scripted/sandbox.json', '--output-format', 'stream-json'],
      {
        cwd: elsewhere,
        env: { ...env, PATH: `${fakeBin}:${process.env.PATH}` },
        encoding: 'utf8',
      },
    )
    expect(sandboxed.status, sandboxed.stderr).toBe(0)
    expect(
      existsSync(npmCalls) ? readFileSync(npmCalls, 'utf8') : '',
      'the sandbox runtime searched for its files',
    ).toBe('')
    expect(sandboxed.stderr).not.toContain('sandbox is off')
    const results = sandboxed.stdout
      .split('\n')
      .filter(Boolean)
      .map((line) => JSON.parse(line))
      .filter((event) => event.type === 'tool/result')
      .map((event) => event.data.content.map((block: { text?: string }) => block.text ?? '').join(''))
    expect(results).toHaveLength(2)
    expect(results[0]).toMatch(/wrote [1-9]/)
    if (outside) {
      const escaped = existsSync(outside)
      rmSync(outside, { force: true })
      expect(escaped, `the sandboxed command wrote ${outside}`).toBe(false)
    }
    expect(results[1]).toContain('unix: EPERM')
  }

  // The PostgreSQL store's client (pg, in its worker file beside the bundle) comes with the install.
  if (!skipWithout('postgresql', HAS_POSTGRES, 'the installed PostgreSQL store')) {
    const server = await startPostgres()
    try {
      const stored = spawnSync(keel, ['-p', 'hello', '--model', 'scripted/demo'], {
        cwd: elsewhere,
        env: { ...env, KEEL_STORE: server.url },
        encoding: 'utf8',
      })
      expect(stored.status, stored.stderr).toBe(0)
      const id = /keel: session (\S+)/.exec(stored.stderr)?.[1]
      const listed = spawnSync(keel, ['sessions', 'list', '--all'], {
        cwd: elsewhere,
        env: { ...env, KEEL_STORE: server.url },
        encoding: 'utf8',
      })
      expect(listed.status, listed.stderr).toBe(0)
      expect(id && listed.stdout).toContain(id)
    } finally {
      server.destroy()
    }
  }

  const serve = spawn(keel, ['serve', '--port', '0', '--model', 'scripted/demo'], { cwd: elsewhere, env })
  try {
    let out = ''
    let err = ''
    serve.stderr.on('data', (chunk) => {
      err += chunk
    })
    const url = await new Promise<string>((resolve, reject) => {
      serve.stdout.on('data', (chunk) => {
        out += chunk
        const found = /http:\/\/\S+/.exec(out)?.[0]
        if (found) resolve(found)
      })
      serve.on('exit', (code) => reject(new Error(`keel serve exited ${code}: ${err}`)))
    })
    const page = await fetch(url)
    expect(page.status).toBe(200)
    const html = await page.text()
    expect(html).toContain('<!doctype html>')
    const script = /src="\.?\/?(assets\/[^"]+\.js)"/.exec(html)?.[1]
    expect(script, html).toBeDefined()
    expect((await fetch(new URL(script!, url))).status).toBe(200)
    expect(err).not.toContain('warning')
  } finally {
    serve.kill('SIGTERM')
    await new Promise((done) => serve.once('close', done))
  }
}, 180_000)
