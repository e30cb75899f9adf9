import type { AddressInfo } from 'node:net'
import { resolve } from 'node:path'
import { serve, type ServerType } from '@hono/node-server'
import type { DoorContext, DoorPrelude, StartedDoor } from '@keel/door'
import { loadScript } from '@keel/llm'
import { createProvider, PROVIDER_NAMES, splitSpec } from '@keel/llm/providers'
import { escapeLine, isSessionId, onNotice } from '@keel/session'
import { originOf, resolveBind } from './bind.ts'
import { ensureClientBuilt } from './build.ts'
import { WebHost } from './host.ts'
import { newToken } from './token.ts'

/** What startServe began: the host listening with its URL printed, waiting for the booted plugins. */
interface StartedServe extends StartedDoor {
  host: WebHost
  server: ServerType
  /** runServe took the host over: from now on it closes it, and abandon() does nothing. */
  take(): void
}

/**
 * `keel serve`'s first half, before the plugins boot: checks the model can be made (a missing key fails now, before
 * any URL is printed), builds the client if needed, listens, and prints the URL. The page is served from now on; the
 * API waits until runServe attaches the booted context. Undefined when the run must boot first: --resume and
 * --continue name their session in the URL, and a provider only a composition registers is unknown until then.
 */
export async function startServe(prelude: DoorPrelude): Promise<StartedServe | undefined> {
  const { flags, cwd, modelSpec } = prelude
  if (flags.resume || flags.continue) return undefined
  const bind = resolveBind(flags)
  if (!(await modelCanBeMade(modelSpec, flags['base-url'], cwd))) return undefined
  const clientDir = await ensureClientBuilt({ log: err })
  const token = newToken()
  const host = new WebHost({ cwd, all: flags.all === true, token, clientDir })
  const { server, port } = await listenOrClose(host, bind.host, bind.port)
  host.listening(bind.host, port, extraHosts())
  printUrl(bind.host, port, token, undefined)
  let taken = false
  return {
    host,
    server,
    take() {
      taken = true
    },
    async abandon() {
      if (taken) return
      taken = true
      await host.close()
      await closeServer(server)
    },
  }
}

/**
 * The checks `ctx.llm.create` makes for the models Keel ships (a key, a URL, a script that exists), made before the
 * plugins are up; false for a provider only a composition registers.
 */
async function modelCanBeMade(spec: string, baseUrl: string | undefined, cwd: string): Promise<boolean> {
  const split = splitSpec(spec)
  if (!split) return false
  if (split.provider === 'scripted') {
    loadScript(split.model, cwd)
    return true
  }
  if (!(PROVIDER_NAMES as readonly string[]).includes(split.provider)) return false
  await createProvider(split.provider, split.model, { cwd, env: process.env, baseUrl })
  return true
}

const err = (line: string) => process.stderr.write(line + '\n')

function printUrl(bindHost: string, port: number, token: string, focus: string | undefined): void {
  // The token rides in the fragment, which the browser never sends to any server (client/token.ts).
  process.stdout.write(`Keel web UI: ${originOf(bindHost, port)}/#token=${token}${focus ? `&s=${focus}` : ''}\n`)
}

/**
 * `keel serve`: builds the client if needed, listens (127.0.0.1:4317 by default; `--port 0` takes any free port),
 * prints the URL with its access token on stdout, and runs until SIGINT, SIGTERM or SIGHUP (a closed terminal). Stopping
 * cancels running turns, which kills their commands and closes each turn on its log; a second signal exits at once
 * (the shell plugin's exit hook still kills the commands). When startServe ran before the boot, the host is already
 * listening and this attaches the booted context to it.
 */
export async function runServe(door: DoorContext): Promise<number> {
  const { ctx, flags } = door
  const bind = resolveBind(flags)
  const all = flags.all === true
  let host: WebHost
  let server: ServerType
  const started = door.started as StartedServe | undefined
  if (started) {
    // Taken over once the model is made: if that fails, the CLI abandons the start, which closes the port.
    const model = await ctx.llm.create(door.modelSpec, { baseUrl: flags['base-url'], cwd: door.cwd })
    started.host.attach(ctx, model, door.notify)
    started.take()
    ;({ host, server } = started)
  } else {
    const focus = initialSession(door)
    const model = await ctx.llm.create(door.modelSpec, { baseUrl: flags['base-url'], cwd: door.cwd })
    const clientDir = await ensureClientBuilt({ log: err })
    const token = newToken()
    host = new WebHost({ ctx, cwd: door.cwd, all, model, token, clientDir, notify: door.notify })
    let port: number
    ;({ server, port } = await listenOrClose(host, bind.host, bind.port))
    host.listening(bind.host, port, extraHosts())
    printUrl(bind.host, port, token, focus)
  }
  // Plugins' one-line notices (`keel/notice`): on stderr here, and the host shows them on the page.
  const stopNotices = onNotice(ctx, (notice) => err(`keel: ${escapeLine(notice.text)}`))
  err(
    all
      ? `keel: serving the sessions of every working directory (--all), new ones in ${escapeLine(door.cwd)}, with ${escapeLine(door.modelSpec)}; Ctrl+C to stop`
      : `keel: serving sessions of ${escapeLine(door.cwd)} with ${escapeLine(door.modelSpec)}; Ctrl+C to stop`,
  )
  if (door.instructionFiles.length)
    err(`keel: instructions: ${door.instructionFiles.map((file) => escapeLine(file.label)).join(', ')}`)
  if (bind.remote) err('keel: warning: listening beyond this machine over plain HTTP; the token is the only protection')
  await stopSignal()
  // After SIGHUP the terminal may be gone: a failed write to it must not end the process before the turns close.
  process.stderr.on('error', () => {})
  err('keel: stopping')
  stopNotices()
  await host.close()
  await closeServer(server)
  return 0
}

async function listenOrClose(
  host: WebHost,
  hostname: string,
  port: number,
): Promise<{ server: ServerType; port: number }> {
  try {
    return await listen(host, hostname, port)
  } catch (error) {
    await host.close()
    throw error
  }
}

function closeServer(server: ServerType): Promise<void> {
  return new Promise<void>((done) => {
    server.close(() => done())
    ;(server as { closeAllConnections?: () => void }).closeAllConnections?.()
  })
}

function listen(host: WebHost, hostname: string, port: number): Promise<{ server: ServerType; port: number }> {
  return new Promise((resolve, reject) => {
    const server = serve({ fetch: host.app.fetch, hostname, port }, (info: AddressInfo) =>
      resolve({ server, port: info.port }),
    )
    server.once('error', (error: NodeJS.ErrnoException) => {
      if (error.code === 'EADDRINUSE')
        reject(new Error(`port ${port} on ${hostname} is in use (try --port 0 for any free port)`))
      else if (error.code === 'EADDRNOTAVAIL')
        reject(new Error(`cannot listen on ${hostname}: no such address on this machine`))
      else reject(error)
    })
  })
}

/** KEEL_SERVE_HOSTS: further `host[:port]` names to answer to, comma-separated (e.g. a TLS proxy's public name). */
function extraHosts(): string[] {
  return (process.env.KEEL_SERVE_HOSTS ?? '')
    .split(',')
    .map((name) => name.trim())
    .filter(Boolean)
}

/** `--resume <id>` or `--continue` open that session in the page (via the URL fragment). */
function initialSession(door: DoorContext): string | undefined {
  const resume: string | undefined = door.flags.resume
  if (resume) {
    if (!isSessionId(resume))
      throw new Error(`--resume: not a session id: ${JSON.stringify(String(resume).slice(0, 80))}`)
    const cwd = door.ctx.sessions.headerOf(resume)?.cwd
    if (!door.flags.all && cwd !== undefined && resolve(cwd) !== resolve(door.cwd)) {
      throw new Error(
        `--resume: session ${resume} belongs to ${escapeLine(cwd)}, not ${escapeLine(door.cwd)}; serve from there, or add --all`,
      )
    }
    return resume
  }
  if (door.flags.continue) return door.ctx.sessions.list(door.cwd).find((summary) => !summary.parent)?.id
  return undefined
}

const STOP_SIGNALS = { SIGINT: 130, SIGTERM: 143, SIGHUP: 129 } as const

function stopSignal(): Promise<void> {
  return new Promise((done) => {
    const stop = () => {
      for (const signal of Object.keys(STOP_SIGNALS) as (keyof typeof STOP_SIGNALS)[]) {
        process.off(signal, stop)
        process.once(signal, () => process.exit(STOP_SIGNALS[signal]))
      }
      done()
    }
    for (const signal of Object.keys(STOP_SIGNALS)) process.on(signal, stop)
  })
}
