// A throwaway PostgreSQL server for the tests of the PostgreSQL session store: Debian's binaries
// (/usr/lib/postgresql/<version>/bin), a cluster in a temp directory, listening on 127.0.0.1 only, one per test file
// (start it in beforeAll, stop it in afterAll). PostgreSQL refuses to run as root; the gate runs as root, so there the
// cluster belongs to Debian's `postgres` user and the commands run through runuser.
import { execFileSync, spawnSync } from 'node:child_process'
import { chmodSync, chownSync, existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs'
import { createServer } from 'node:net'
import { tmpdir, userInfo } from 'node:os'
import { join } from 'node:path'

const UNIT_TIER = process.env.KEEL_TESTS === 'unit'

/** The directory of Debian's PostgreSQL binaries (the newest version installed), or undefined. */
function findBinaries(): string | undefined {
  const root = '/usr/lib/postgresql'
  let versions: string[]
  try {
    versions = readdirSync(root)
  } catch {
    return undefined
  }
  const sorted = versions.filter((name) => /^\d+$/.test(name)).sort((a, b) => Number(b) - Number(a))
  for (const version of sorted) {
    const bin = join(root, version, 'bin')
    if (existsSync(join(bin, 'initdb')) && existsSync(join(bin, 'pg_ctl'))) return bin
  }
  return undefined
}

const POSTGRES_BIN: string | undefined = UNIT_TIER ? undefined : findBinaries()

/** Whether PostgreSQL's server binaries are here (test-support/system-tools.ts's skip rule decides what follows). */
export const HAS_POSTGRES = POSTGRES_BIN !== undefined

const asRoot = userInfo().uid === 0

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer()
    server.once('error', reject)
    server.listen(0, '127.0.0.1', () => {
      const port = (server.address() as { port: number }).port
      server.close(() => resolve(port))
    })
  })
}

export interface PostgresServer {
  /** A connection string for the database `keel` (user `keel`, no password: trust on 127.0.0.1 only). */
  url: string
  port: number
  /** Its Unix socket (`<dir>/.s.PGSQL.<port>`), for tests of what may reach it that way. */
  socket: string
  /** The same server with a password in the URL (the user `secret` has password `hunter2-pw`). */
  urlWithPassword: string
  /** Stops the server (fast shutdown: clients are disconnected). */
  stop(mode?: 'fast' | 'immediate'): void
  /** Starts it again on the same port and directory. */
  start(): void
  /** Stops the server and removes its directory. */
  destroy(): void
}

/** Starts a fresh cluster in a temp directory (fsync off unless asked: the bench wants it on); throws naming what failed. */
export async function startPostgres(wanted: { fsync?: boolean } = {}): Promise<PostgresServer> {
  const bin = POSTGRES_BIN
  if (!bin) throw new Error('PostgreSQL not found under /usr/lib/postgresql/*/bin (apt-get install postgresql)')
  const dir = mkdtempSync(join(tmpdir(), 'keel-pg-'))
  const data = join(dir, 'data')
  const log = join(dir, 'server.log')
  const port = await freePort()
  if (asRoot) {
    const ids = execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).trim()
    const gid = execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).trim()
    chownSync(dir, Number(ids), Number(gid))
    chmodSync(dir, 0o700)
  }
  const run = (command: string, args: string[]) => {
    const [file, argv] = asRoot
      ? ['runuser', ['-u', 'postgres', '--', join(bin, command), ...args]]
      : [join(bin, command), args]
    const result = spawnSync(file, argv, { encoding: 'utf8', cwd: dir })
    if (result.error || result.status !== 0)
      throw new Error(`${command} failed: ${result.error?.message ?? ''}${result.stderr ?? ''}${result.stdout ?? ''}`)
    return result.stdout
  }
  run('initdb', ['-D', data, '-U', 'keel', '-A', 'trust', '--no-sync', '-E', 'UTF8', '--no-instructions'])
  // 127.0.0.1 only, no unix socket outside the temp dir; the user `secret` must send its password (scram).
  writeFileSync(
    join(data, 'pg_hba.conf'),
    'host all secret 127.0.0.1/32 scram-sha-256\nhost all all 127.0.0.1/32 trust\nlocal all all trust\n',
  )
  const options = `-c listen_addresses=127.0.0.1 -c port=${port} -c unix_socket_directories=${dir} -c fsync=${wanted.fsync ? 'on' : 'off'} -c max_connections=200`
  const start = () => run('pg_ctl', ['-D', data, '-l', log, '-w', '-t', '30', '-o', options, 'start'])
  const stop = (mode: 'fast' | 'immediate' = 'fast') => run('pg_ctl', ['-D', data, '-m', mode, '-w', 'stop'])
  start()
  const psql = join(bin, 'psql')
  const sql = (statement: string) => {
    const result = spawnSync(
      psql,
      ['-h', '127.0.0.1', '-p', String(port), '-U', 'keel', '-d', 'postgres', '-c', statement],
      {
        encoding: 'utf8',
      },
    )
    if (result.status !== 0) throw new Error(`psql failed: ${result.stderr}`)
  }
  sql('CREATE DATABASE keel')
  // The same rights as `keel` (the tables either one creates serve both), but it must log in with its password.
  sql("CREATE ROLE secret LOGIN SUPERUSER PASSWORD 'hunter2-pw'")
  let running = true
  return {
    url: `postgres://keel@127.0.0.1:${port}/keel`,
    urlWithPassword: `postgres://secret:hunter2-pw@127.0.0.1:${port}/keel`,
    port,
    socket: join(dir, `.s.PGSQL.${port}`),
    stop(mode) {
      if (running) stop(mode)
      running = false
    },
    start() {
      if (!running) start()
      running = true
    },
    destroy() {
      try {
        if (running) stop('immediate')
      } catch {}
      running = false
      rmSync(dir, { recursive: true, force: true })
    },
  }
}
