// `/init` through the real binary with the scripted model: the model is asked to study the repository and writes
// AGENTS.md with `write`; an AGENTS.md that exists is not changed from print mode, which cannot ask first.
import { spawnSync } from 'node:child_process'
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeEach, expect, test } from 'vitest'

const root = join(import.meta.dirname, '../../..')
let dir: string
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'keel-init-'))
  mkdirSync(join(dir, 'repo', '.git'), { recursive: true })
  writeFileSync(join(dir, 'repo', 'package.json'), '{ "scripts": { "test": "vitest" } }')
  writeFileSync(
    join(dir, 'script.json'),
    JSON.stringify({
      steps: [
        {
          when: 'Study this repository',
          toolCalls: [{ name: 'write', arguments: { path: 'AGENTS.md', content: '# Agents\n\nRun `npm test`.\n' } }],
        },
        { when: 'Study this repository', text: 'Wrote AGENTS.md: the test command.' },
      ],
    }),
  )
})
afterEach(() => rmSync(dir, { recursive: true, force: true }))

function keel(args: string[]) {
  return spawnSync(process.execPath, [join(root, 'bin/keel.js'), ...args], {
    cwd: join(dir, 'repo'),
    env: { ...process.env, KEEL_HOME: join(dir, 'home'), KEEL_MODE: '' },
    encoding: 'utf8',
  })
}

test('/init writes AGENTS.md through write, as a prompt the log marks as the init command', () => {
  const run = keel(['-p', '/init', '--model', `scripted/${join(dir, 'script.json')}`])
  expect(run.stderr).not.toContain('Error')
  expect(run.status).toBe(0)
  expect(run.stdout).toBe('Wrote AGENTS.md: the test command.\n')
  expect(readFileSync(join(dir, 'repo', 'AGENTS.md'), 'utf8')).toBe('# Agents\n\nRun `npm test`.\n')
  const sessions = join(dir, 'home', 'sessions')
  const [slug] = readdirSync(sessions)
  const [file] = readdirSync(join(sessions, slug!))
  const events = readFileSync(join(sessions, slug!, file!), 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line))
  const prompt = events.find((event) => event.type === 'user/message')
  expect(prompt.data.message.command).toBe('init')
  expect(prompt.data.message.content[0].text).toContain(`Write a new AGENTS.md at ${join(dir, 'repo', 'AGENTS.md')}`)
  expect(events.filter((event) => event.type === 'tool/call').map((event) => event.data.name)).toEqual(['write'])
})

test('an AGENTS.md that exists is not changed from print mode: one line, exit 2, no request', () => {
  writeFileSync(join(dir, 'repo', 'AGENTS.md'), 'mine\n')
  const run = keel(['-p', '/init', '--model', `scripted/${join(dir, 'script.json')}`])
  expect(run.status).toBe(2)
  expect(run.stderr).toBe(
    `keel: /init: ${join(dir, 'repo', 'AGENTS.md')} exists and print mode cannot ask before changing it; run /init in keel or keel serve, or move the file away first\n`,
  )
  expect(readFileSync(join(dir, 'repo', 'AGENTS.md'), 'utf8')).toBe('mine\n')
  expect(existsSync(join(dir, 'home', 'sessions'))).toBe(false)
})
