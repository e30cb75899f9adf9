// Runs the real `keel serve` binary and reads the URL it prints.
import { spawn, type ChildProcess } from 'node:child_process'
import { join } from 'node:path'
import type { BrowserContext } from 'playwright-core'
import { requireChromium } from '../../../test-support/system-tools.ts'

export const REPO = join(import.meta.dirname, '../../..')

export interface Served {
  url: string
  origin: string
  token: string
  child: ChildProcess
  stderr(): string
  /** SIGINT, then the exit code (SIGKILL after `graceMs`). */
  stop(graceMs?: number): Promise<number | null>
}

export interface RunOptions {
  /** Run under `ulimit -n <n>` (bash execs node, so signals still reach it directly). */
  maxOpenFiles?: number
}

export function runKeel(
  args: string[],
  env: Record<string, string>,
  cwd: string,
  options: RunOptions = {},
): ChildProcess {
  const argv = [process.execPath, join(REPO, 'bin/keel.js'), ...args]
  const [file, ...rest] =
    options.maxOpenFiles === undefined
      ? argv
      : ['bash', '-c', `ulimit -n ${options.maxOpenFiles} && exec "$@"`, 'bash', ...argv]
  return spawn(file!, rest, { cwd, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] })
}

export function exitOf(child: ChildProcess): Promise<number | null> {
  return new Promise((done) => {
    if (child.exitCode !== null || child.signalCode !== null) done(child.exitCode)
    else child.once('exit', (code) => done(code))
  })
}

export async function serve(
  args: string[],
  env: Record<string, string>,
  cwd: string,
  timeoutMs = 60_000,
  options: RunOptions = {},
): Promise<Served> {
  const child = runKeel(['serve', ...args], env, cwd, options)
  let out = ''
  let err = ''
  child.stderr!.on('data', (chunk) => {
    err += chunk
  })
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL')
      reject(new Error(`keel serve printed no URL within ${timeoutMs} ms; stderr:\n${err}`))
    }, timeoutMs)
    child.stdout!.on('data', (chunk) => {
      out += chunk
      const match = /Keel web UI: (http:\/\/\S+)/.exec(out)
      if (match) {
        clearTimeout(timer)
        resolve(match[1]!)
      }
    })
    child.once('exit', (code) => {
      clearTimeout(timer)
      reject(new Error(`keel serve exited with ${code}; stderr:\n${err}`))
    })
  })
  const parsed = new URL(url)
  return {
    url,
    origin: parsed.origin,
    token: new URLSearchParams(parsed.hash.slice(1)).get('token') ?? '',
    child,
    stderr: () => err,
    async stop(graceMs = 10_000) {
      if (child.exitCode !== null) return child.exitCode
      child.kill('SIGINT')
      const timer = setTimeout(() => child.kill('SIGKILL'), graceMs)
      const code = await exitOf(child)
      clearTimeout(timer)
      return code
    },
  }
}

/**
 * `keel serve` for a browser test: the scripted model `<scratch>/script.json` and the composition `<scratch>/keel.yml`
 * (see `writeComposition`), in `cwd`, with `home` as `KEEL_HOME`.
 */
export function serveScripted(scratch: string, cwd: string, home: string): Promise<Served> {
  const args = ['--port', '0', '--model', `scripted/${join(scratch, 'script.json')}`, '--cwd', cwd]
  return serve([...args, '--config', join(scratch, 'keel.yml')], { KEEL_HOME: home }, cwd)
}

/** How the browser tests start Chromium: headless, and quiet on the network (no updates, sync or QUIC). */
export function chromiumOptions() {
  return {
    executablePath: requireChromium(),
    headless: true,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  }
}

/** Headless Chromium with its own profile, quiet on the network. */
export async function launchBrowser(
  profile: string,
  viewport: { width: number; height: number },
): Promise<BrowserContext> {
  const { chromium } = await import('playwright-core')
  return chromium.launchPersistentContext(profile, { ...chromiumOptions(), viewport })
}
