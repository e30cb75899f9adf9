// Through the real binary: `keel mcp list`, and print mode with a project .mcp.json whose servers start with the
// session (one published server that works, one that cannot start).
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, test } from 'vitest'
import { run } from '../../../test-support/run.ts'
import { EVERYTHING, FAULTY, hostile } from './support.ts'

const root = join(import.meta.dirname, '../../..')
const scratch = mkdtempSync(join(tmpdir(), 'keel-mcp-cli-'))
afterAll(() => rmSync(scratch, { recursive: true, force: true }))

function project(servers: Record<string, unknown>): string {
  const dir = mkdtempSync(join(scratch, 'project-'))
  mkdirSync(join(dir, '.git'))
  writeFileSync(join(dir, '.mcp.json'), JSON.stringify({ mcpServers: servers }))
  return dir
}

// The tests run side by side, each with its own KEEL_HOME: every keel process starts server-everything (about 1 s)
// and waits for it to exit, time the others use.
let homes = 0
function keel(args: string[], cwd: string, home: string) {
  return run(process.execPath, [join(root, 'bin/keel.js'), ...args], { cwd, env: { ...process.env, KEEL_HOME: home } })
}
const newHome = () => join(scratch, `home-${++homes}`)

const SERVERS = { everything: EVERYTHING, broken: { ...FAULTY, env: { FAULTY_FAIL_AT_START: '1' } } }

describe.concurrent('keel mcp list', () => {
  test('each server with its state, transport, source and tools; --json for machines', async ({ expect }) => {
    const cwd = project(SERVERS)
    const home = newHome()
    // The person's own project, trusted: an untrusted folder's .mcp.json is never started (tests/trust.test.ts).
    expect((await keel(['trust'], cwd, home)).status).toBe(0)
    const [text, json] = await Promise.all([
      keel(['mcp', 'list'], cwd, home),
      keel(['mcp', 'list', '--json'], cwd, home),
    ])
    expect(text.status, text.stderr).toBe(0)
    expect(text.stdout).toContain(`everything  ready  stdio  ${join(cwd, '.mcp.json')}\n  mcp__everything__echo\n`)
    expect(text.stdout).toMatch(/broken {2}failed {2}stdio .*\n {2}.*missing database url/)
    const servers = JSON.parse(json.stdout) as { name: string; state: string; tools: string[] }[]
    expect(servers.map((s) => [s.name, s.state])).toEqual([
      ['everything', 'ready'],
      ['broken', 'failed'],
    ])
    expect(servers[0]!.tools).toContain('mcp__everything__get-sum')
  })

  test('mcpServers in a settings file are started too; a bad one names the file and the server, exit 2', async ({
    expect,
  }) => {
    const home = newHome()
    const cwd = mkdtempSync(join(scratch, 'settings-'))
    mkdirSync(join(cwd, '.git'))
    mkdirSync(join(cwd, '.keel'))
    writeFileSync(join(cwd, '.keel', 'settings.json'), JSON.stringify({ mcpServers: { everything: EVERYTHING } }))
    const listed = await keel(['mcp', 'list', '--trust'], cwd, home)
    expect(listed.status, listed.stderr).toBe(0)
    expect(listed.stdout).toContain('everything  ready  stdio  settings\n  mcp__everything__echo\n')
    writeFileSync(join(cwd, '.keel', 'settings.json'), JSON.stringify({ mcpServers: { broken: { args: ['x'] } } }))
    const bad = await keel(['mcp', 'list'], cwd, home)
    expect(bad.status).toBe(2)
    expect(bad.stderr).toBe(
      `keel: ${join(cwd, '.keel', 'settings.json')}: mcpServers.broken needs "command" (stdio) or "url" (http)\n`,
    )
  })

  test('no servers configured says where to add them', async ({ expect }) => {
    const cwd = mkdtempSync(join(scratch, 'empty-'))
    expect((await keel(['mcp', 'list'], cwd, newHome())).stdout).toBe(
      'No MCP servers configured. Add them to .mcp.json or to mcpServers in a settings file.\n',
    )
  })
})

describe.concurrent('keel -p with MCP servers', () => {
  test('the model calls an MCP tool; a server that fails is one warning line and the turn completes', async ({
    expect,
  }) => {
    const cwd = project(SERVERS)
    const script = join(cwd, 'script.json')
    writeFileSync(
      script,
      JSON.stringify({
        steps: [
          { toolCalls: [{ name: 'mcp__everything__get-sum', arguments: { a: 20, b: 22 } }] },
          { text: 'The sum is 42.' },
        ],
      }),
    )
    const home = newHome()
    const result = await keel(['-p', 'add', '--trust', '--model', `scripted/${script}`], cwd, home)
    expect(result.status, result.stderr).toBe(0)
    expect(result.stdout).toBe('The sum is 42.\n')
    expect(result.stderr).toMatch(/^keel: mcp server broken failed to start: .*missing database url/m)
    expect(result.stderr).toContain('→ everything › get-sum {"a":20,"b":22}')
    const dir = join(home, 'sessions', readdirSync(join(home, 'sessions'))[0]!)
    const events = readFileSync(join(dir, readdirSync(dir).find((f) => f.endsWith('.jsonl'))!), 'utf8')
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line))
    const logged = events.find((e) => e.type === 'tool/result')
    expect(logged.data.isError).toBe(false)
    expect(JSON.stringify(logged.data.content)).toContain('42')
  })
})

describe.concurrent('hostile tool lists through the binary', () => {
  test('5,000 tools and a 5,000-deep schema: capped, each drop named once on stderr, and the turn works', async ({
    expect,
  }) => {
    const cwd = project({ many: hostile('many'), deep: hostile('deep') })
    const home = newHome()
    expect((await keel(['trust'], cwd, home)).status).toBe(0)
    const script = join(cwd, 'script.json')
    writeFileSync(
      script,
      JSON.stringify({
        steps: [{ toolCalls: [{ name: 'mcp__deep__echo', arguments: { text: 'still here' } }] }, { text: 'done' }],
      }),
    )
    const [out, list] = await Promise.all([
      keel(['-p', 'go', '--yolo', '--model', `scripted/${script}`, '--output-format', 'stream-json'], cwd, home),
      keel(['mcp', 'list', '--json'], cwd, home),
    ])
    expect(out.status, out.stderr).toBe(0)
    expect(out.stderr).toContain(
      'keel: mcp server deep: a tool was left out: "deep" (its input schema nests deeper than 64 levels)',
    )
    expect(out.stderr).toMatch(
      /keel: mcp server many: a tool was left out: 4900 more tools past the limit of 100 tools/,
    )
    const results = out.stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line))
      .filter((event) => event.type === 'tool/result')
    expect(results.map((event) => event.data.content[0].text)).toEqual(['echo still here'])
    const listed = JSON.parse(list.stdout) as { name: string; tools: string[] }[]
    expect(Object.fromEntries(listed.map((server) => [server.name, server.tools.length]))).toEqual({
      many: 100,
      deep: 1,
    })
  })
})
