// The shell parser (mvdan-sh: ~60 ms of code to load, ~21 MB once loaded) loads as soon as the bash command the model
// is writing shows it will need it, so the first command with a pipe, a redirect or a quote is not judged behind its
// load; a session of plain commands never loads it. The loop test runs in a process of its own (vitest.config.ts):
// the parser loads once a process, and other files load it.
import { expect, test } from 'vitest'
import type { Agent, AgentDelta } from '@keel/agent'
import { makeKeel } from '../../../test-support/harness.ts'
import { parserPreload } from '../src/parser-preload.ts'
import { parserLoaded } from './parser-loaded.ts'

/** The loads a preload asks for as a call's argument text arrives in these pieces. */
function loadsFor(name: string, pieces: string[]): number {
  let loads = 0
  const preload = parserPreload(async () => {
    loads++
  })
  const agent = {} as Agent
  const deltas: AgentDelta[] = [
    { kind: 'tool-input', index: 0, name, text: '' },
    ...pieces.map((text) => ({ kind: 'tool-input' as const, index: 0, text })),
  ]
  for (const delta of deltas) preload(agent, delta)
  return loads
}

test.each([
  ['a pipe', ['{"command":"echo a ', '| cat"}']],
  ['a redirect, in the middle of a word', ['{"command": "npm test 2>', '&1"}']],
  ['a quote (an escape in the JSON)', ['{"command":"echo \\"hi', '\\""}']],
  ['a word bash reads as syntax, once it ends', ['{"command":"tim', 'e ls"}']],
  ['an assignment', ['{"command":"A=1 ', 'ls"}']],
])('%s loads the parser, once', (_what, pieces) => {
  expect(loadsFor('bash', [...pieces, '', '{"more":"|"}'])).toBe(1)
})

test.each([
  ['plain words', ['{"command":"git sta', 'tus --short src"}']],
  ['a word that begins like syntax', ['{"command":"in', 'stall.sh x"}']],
  ['the object before the command', ['{"timeout":', '5, "command":"ls -la"}']],
])('%s load nothing', (_what, pieces) => {
  expect(loadsFor('bash', pieces)).toBe(0)
})

test('a command read no further than its first 8 KB: plain words that long, then a pipe, load nothing', () => {
  const plain = `{"command":"echo ${'word '.repeat(2000)}`
  expect(loadsFor('bash', [plain, '| cat"}'])).toBe(0)
  expect(loadsFor('bash', [plain.slice(0, 4000), '| cat"}'])).toBe(1)
})

test("another tool's arguments load nothing, a command among them too", () => {
  expect(loadsFor('grep', ['{"pattern":"a|b', '"}'])).toBe(0)
  expect(loadsFor('an_mcp_tool', ['{"command":"a | ', 'b"}'])).toBe(0)
})

test('through the loop: plain commands load no parser; a piped one has it loaded by its check', async () => {
  const keel = await makeKeel({
    steps: [
      { text: 'nothing to run' },
      { toolCalls: [{ name: 'bash', arguments: { command: 'echo plain words' } }] },
      { text: 'ran' },
      // The pause before the step's next call is the time a model takes to write the rest of the step.
      {
        delayMs: 100,
        toolCalls: [
          { name: 'bash', arguments: { command: 'echo piped | cat' } },
          { name: 'todo_write', arguments: { todos: [{ content: 'look', status: 'in_progress' }] } },
        ],
      },
      { text: 'ran' },
    ],
  })
  try {
    const agent = keel.agent()
    expect((await agent.prompt('talk')).reason).toBe('completed')
    expect((await agent.prompt('plain')).reason).toBe('completed')
    expect(parserLoaded()).toBe(false)
    let atCall: boolean | undefined
    keel.ctx.on('session/event', (_session, event) => {
      if (event.type === 'tool/call') atCall ??= parserLoaded()
    })
    expect((await agent.prompt('piped')).reason).toBe('completed')
    expect(atCall).toBe(true)
  } finally {
    await keel.dispose()
  }
})
