// The first hour in the terminal UI: the header names the instruction files; an unused session leaves no file.
import { mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterEach, expect, test } from 'vitest'
import { makeKeel, type Keel } from '../../../test-support/harness.ts'
import { KeelApp } from '../src/app.ts'
import { plainLines, RecordingTerminal } from './support.ts'

let keel: Keel | undefined
let app: KeelApp | undefined
afterEach(async () => {
  await app?.quit()
  await keel?.dispose()
  app = undefined
  keel = undefined
})

test('the header names the instruction files in the system prompt, and says nothing when there are none', async () => {
  keel = await makeKeel()
  mkdirSync(join(keel.cwd, '.git'))
  mkdirSync(join(keel.cwd, 'sub'))
  writeFileSync(join(keel.cwd, 'AGENTS.md'), 'root rules\n')
  writeFileSync(join(keel.cwd, 'sub', 'CLAUDE.md'), 'sub rules\n\u001b[2J')
  app = new KeelApp({
    ctx: keel.ctx,
    terminal: new RecordingTerminal(100, 30),
    agent: keel.agent({ cwd: join(keel.cwd, 'sub') }),
    cwd: keel.cwd,
    modelSpec: 'scripted/test',
    version: '0.0.0-test',
  })
  void app.run()
  expect(plainLines(app.frame(100)).join('\n')).toContain('Instructions: ../AGENTS.md, CLAUDE.md')
  await app.quit()
  app = new KeelApp({
    ctx: keel.ctx,
    terminal: new RecordingTerminal(100, 30),
    agent: keel.agent({ cwd: keel.home }),
    cwd: keel.home,
    modelSpec: 'scripted/test',
    version: '0.0.0-test',
  })
  void app.run()
  expect(plainLines(app.frame(100)).join('\n')).not.toContain('Instructions:')
})

test('opening the UI, /new and quitting without a prompt leave no session behind', async () => {
  keel = await makeKeel({ steps: [{ text: 'answered' }] })
  const first = keel.agent()
  app = new KeelApp({
    ctx: keel.ctx,
    terminal: new RecordingTerminal(100, 30),
    agent: first,
    cwd: keel.cwd,
    modelSpec: 'scripted/test',
    version: '0.0.0-test',
  })
  const done = app.run()
  app.submit('/new')
  expect(app.agent.id).not.toBe(first.id)
  app.submit('/quit')
  await done
  app = undefined
  expect(keel.ctx.sessions.list()).toEqual([])
})
