// web_fetch through the real `keel -p`: the bundle's HTML worker, the per-host permission in auto mode, and the
// settings that name a host (sandbox.allowedDomains, which also lets it resolve to loopback).
import { spawn } from 'node:child_process'
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'

const root = join(import.meta.dirname, '../../..')
const scratch = mkdtempSync(join(tmpdir(), 'keel-fetch-cli-'))
let server: Server
let url: string

beforeAll(async () => {
  server = createServer((_req, res) =>
    res
      .writeHead(200, { 'content-type': 'text/html' })
      .end(
        '<html><head><title>Guide</title></head><body><article><h1>Install</h1><p>Run the installer now.</p></article></body></html>',
      ),
  )
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done))
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/guide`
})
afterAll(() => {
  server.close()
  rmSync(scratch, { recursive: true, force: true })
})

function keel(
  args: string[],
  home: string,
  cwd: string,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [join(root, 'bin/keel.js'), ...args], {
      cwd,
      env: { ...process.env, KEEL_HOME: home },
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (chunk) => (stdout += chunk))
    child.stderr.on('data', (chunk) => (stderr += chunk))
    child.on('close', (code) => resolve({ code, stdout, stderr }))
  })
}

function resultOf(home: string): string {
  const dir = join(home, 'sessions')
  const [folder] = readdirSync(dir)
  const [file] = readdirSync(join(dir, folder!)).filter((name) => name.endsWith('.jsonl'))
  const events = readFileSync(join(dir, folder!, file!), 'utf8')
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line))
  const result = events.find((event) => event.type === 'tool/result')
  return result.data.content.map((block: { text?: string }) => block.text ?? '').join('')
}

describe('web_fetch through keel -p', () => {
  const run = (name: string, domains: string[] | undefined) => {
    const home = join(scratch, name, 'home')
    const cwd = join(scratch, name, 'cwd')
    mkdirSync(home, { recursive: true })
    mkdirSync(cwd, { recursive: true })
    if (domains) writeFileSync(join(home, 'settings.json'), JSON.stringify({ sandbox: { allowedDomains: domains } }))
    const script = join(scratch, name, 'script.json')
    writeFileSync(
      script,
      JSON.stringify({ steps: [{ toolCalls: [{ name: 'web_fetch', arguments: { url } }] }, { text: 'ok' }] }),
    )
    return { home, cwd, args: ['-p', 'read the guide', '--mode', 'auto', '--model', `scripted/${script}`] }
  }

  test('a host named in sandbox.allowedDomains is fetched, converted to Markdown in the worker', async () => {
    const { home, cwd, args } = run('allowed', ['127.0.0.1'])
    const result = await keel(args, home, cwd)
    expect(result.code, result.stderr).toBe(0)
    const text = resultOf(home)
    expect(text).toContain('# Guide')
    expect(text).toContain('# Install\n\nRun the installer now.')
  })

  test('in auto mode an unlisted host is refused, naming the host and the setting', async () => {
    const { home, cwd, args } = run('refused', undefined)
    const result = await keel(args, home, cwd)
    expect(result.code, result.stderr).toBe(0)
    expect(resultOf(home)).toMatch(/declined: denied by auto mode: 127\.0\.0\.1 is not on sandbox\.allowedDomains/)
  })
})
