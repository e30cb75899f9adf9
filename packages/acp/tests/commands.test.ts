// Command files over ACP: the real `keel acp` spoken to with the SDK's framing. `session/new` is followed by an
// `available_commands_update` listing a copied `.claude/commands` layout, and a prompt `/name args` runs the file's
// expansion, which is what lands on the log with the command named.
import { spawn, spawnSync } from 'node:child_process'
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, describe, expect, test } from 'vitest'
import { methods, ndJsonStream } from '@agentclientprotocol/sdk'
import { initialize, testClient } from './support.ts'

const REPO = resolve(fileURLToPath(new URL('../../..', import.meta.url)))
const scratch = mkdtempSync(join(tmpdir(), 'keel-acp-commands-'))
afterAll(() => rmSync(scratch, { recursive: true, force: true }))

describe('keel acp: command files', { timeout: 90_000 }, () => {
  test('available_commands_update lists them; a /name prompt runs the expansion', async () => {
    const project = join(scratch, 'project')
    const home = join(scratch, 'home')
    mkdirSync(join(project, '.claude/commands/frontend'), { recursive: true })
    spawnSync('git', ['init', '-q'], { cwd: project })
    writeFileSync(
      join(project, '.claude/commands/frontend/review.md'),
      '---\ndescription: Review a component carefully\nargument-hint: [file]\n---\nReview the component in $1 for accessibility.\n',
    )
    mkdirSync(join(home, 'commands'), { recursive: true })
    writeFileSync(join(home, 'commands/standup.md'), 'Summarise what changed since yesterday.\n')
    const model = join(scratch, 'script.json')
    writeFileSync(model, JSON.stringify({ steps: [{ text: 'Reviewed.' }] }))
    const child = spawn(process.execPath, [join(REPO, 'bin/keel.js'), 'acp', '--model', `scripted/${model}`], {
      cwd: project,
      env: { ...process.env, KEEL_HOME: home, KEEL_ACP_PLAN: '', KEEL_DEBUG: '', KEEL_MODE: '' },
      stdio: ['pipe', 'pipe', 'pipe'],
    })
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
      await initialize(client)
      const agent = client.connection.agent
      const { sessionId } = await agent.request(methods.agent.session.new, { cwd: project, mcpServers: [] })
      await expect
        .poll(() => client.updates(sessionId, 'available_commands_update').length, { timeout: 10_000 })
        .toBe(1)
      const [update] = client.updates(sessionId, 'available_commands_update')
      expect(update).toEqual({
        sessionUpdate: 'available_commands_update',
        availableCommands: [
          { name: 'frontend:review', description: 'Review a component carefully', input: { hint: '[file]' } },
          { name: 'standup', description: 'Summarise what changed since yesterday.' },
        ],
      })
      const response = await agent.request(methods.agent.session.prompt, {
        sessionId,
        prompt: [{ type: 'text', text: '/frontend:review src/button.tsx' }],
      })
      expect(response.stopReason, stderr).toBe('end_turn')
      const dir = join(home, 'sessions')
      const folder = join(dir, readdirSync(dir)[0]!)
      const file = readdirSync(folder).find((f) => f.endsWith('.jsonl'))!
      const message = readFileSync(join(folder, file), 'utf8')
        .trim()
        .split('\n')
        .map((line) => JSON.parse(line))
        .find((e) => e.type === 'user/message').data.message
      expect(message.command).toBe('frontend:review')
      expect(message.content[0].text).toBe('Review the component in src/button.tsx for accessibility.')
    } finally {
      child.kill()
    }
  })
})
