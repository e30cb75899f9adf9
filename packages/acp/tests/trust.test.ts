// `keel acp` serves sessions whose cwd comes from the client, not from where it was started: each session gets its
// own project's deny rules, and its sandbox protects that project's files (research turn 3, A1, A2).
import { spawn, spawnSync } from 'node:child_process'
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, describe, expect, test } from 'vitest'
import { methods, ndJsonStream, PROTOCOL_VERSION } from '@agentclientprotocol/sdk'
import { testClient } from './support.ts'

const REPO = resolve(fileURLToPath(new URL('../../..', import.meta.url)))
const scratch = mkdtempSync(join(tmpdir(), 'keel-acp-trust-'))
afterAll(() => rmSync(scratch, { recursive: true, force: true }))

describe('keel acp: the session project decides', { timeout: 90_000 }, () => {
  test("a session in another folder keeps that folder's deny rules, and its sandbox protects that folder's files", async () => {
    const spawnDir = join(scratch, 'spawned-here')
    const project = join(scratch, 'project')
    const home = join(scratch, 'home')
    mkdirSync(join(spawnDir, '.keel'), { recursive: true })
    // Where keel acp was started: an untrusted folder whose held-back line reaches the door as a notice.
    writeFileSync(join(spawnDir, '.keel', 'settings.json'), JSON.stringify({ mode: 'yolo' }))
    mkdirSync(join(project, '.keel'), { recursive: true })
    spawnSync('git', ['init', '-q'], { cwd: project })
    writeFileSync(join(project, '.keel', 'settings.json'), JSON.stringify({ permissions: { deny: ['bash(rm:*)'] } }))
    writeFileSync(join(project, 'precious.txt'), 'precious\n')
    const model = join(scratch, 'script.json')
    writeFileSync(
      model,
      JSON.stringify({
        steps: [
          { toolCalls: [{ name: 'bash', arguments: { command: 'rm precious.txt' } }] },
          {
            toolCalls: [
              {
                name: 'bash',
                arguments: {
                  command:
                    'printf "#!/bin/sh\\necho hook\\n" > .git/hooks/pre-commit && chmod +x .git/hooks/pre-commit && echo HOOK; echo "{}" > .mcp.json && echo MCP; printf "[core]\\n\\tfsmonitor = evil\\n" >> .git/config && echo CONFIG; echo end',
                },
              },
            ],
          },
          { toolCalls: [{ name: 'write', arguments: { path: '.keel/settings.json', content: '{"mode":"yolo"}' } }] },
          { text: 'done' },
        ],
      }),
    )
    const child = spawn(
      process.execPath,
      [join(REPO, 'bin/keel.js'), 'acp', '--mode', 'auto', '--model', `scripted/${model}`],
      {
        cwd: spawnDir,
        env: { ...process.env, KEEL_HOME: home, KEEL_ACP_PLAN: '', KEEL_DEBUG: '', KEEL_MODE: '' },
        stdio: ['pipe', 'pipe', 'pipe'],
      },
    )
    let stderr = ''
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')))
    child.stdin.on('error', () => {})
    const fromChild = new ReadableStream<Uint8Array>({
      start(controller) {
        child.stdout.on('data', (chunk: Buffer) => controller.enqueue(new Uint8Array(chunk)))
        child.stdout.on('end', () => controller.close())
      },
    })
    const toChild = new WritableStream<Uint8Array>({
      write: (chunk) => new Promise<void>((done) => child.stdin.write(chunk, () => done())),
    })
    const client = testClient(ndJsonStream(toChild, fromChild))
    try {
      await client.connection.agent.request(methods.agent.initialize, {
        protocolVersion: PROTOCOL_VERSION,
        clientCapabilities: { session: { notices: {} } },
      })
      // The person says no: a write to a protected path is asked about even in auto mode.
      client.respond(() => ({ outcome: { outcome: 'selected', optionId: 'reject_once' } }))
      const agent = client.connection.agent
      const { sessionId } = await agent.request(methods.agent.session.new, { cwd: project, mcpServers: [] })
      const response = await agent.request(methods.agent.session.prompt, {
        sessionId,
        prompt: [{ type: 'text', text: 'go' }],
      })
      expect(response.stopReason, stderr).toBe('end_turn')
      // The held-back line is a notice: the client that shows notices gets it as one, not only on stderr.
      expect(client.updates(sessionId, 'notice')).toContainEqual({
        sessionUpdate: 'notice',
        severity: 'warning',
        title: expect.stringContaining(`${spawnDir} is not trusted: held back mode`),
      })
      expect(readFileSync(join(project, 'precious.txt'), 'utf8')).toBe('precious\n')
      expect(existsSync(join(project, '.git', 'hooks', 'pre-commit'))).toBe(false)
      expect(existsSync(join(project, '.mcp.json'))).toBe(false)
      expect(readFileSync(join(project, '.git', 'config'), 'utf8')).not.toContain('fsmonitor')
      expect(JSON.parse(readFileSync(join(project, '.keel', 'settings.json'), 'utf8'))).toEqual({
        permissions: { deny: ['bash(rm:*)'] },
      })
      const failed = client
        .updates(sessionId, 'tool_call_update')
        .filter((update) => 'status' in update && update.status === 'failed')
      expect(failed.length).toBeGreaterThanOrEqual(2)
      expect(client.permissionRequests.map((request) => request.toolCall.title)).toEqual(['Write .keel/settings.json'])
      expect(JSON.stringify(failed)).toContain('denied by rule bash(rm:*)')
    } finally {
      child.stdin.end()
      const timer = setTimeout(() => child.kill('SIGKILL'), 15_000)
      await new Promise((done) => child.on('exit', done))
      clearTimeout(timer)
    }
  })
})
