// The shell parser (mvdan-sh, ~60 ms of code to load) is loaded as the model begins a bash call, so the first command
// that needs it (a pipe, a redirect, a quote) is not judged behind its load; an answer in words alone loads nothing.
// In a process of its own (vitest.config.ts): the parser loads once a process, and other files load it.
// parser-preload-reasoning.test.ts holds the other moment it loads: while the model reasons.
import { expect, test } from 'vitest'
import { makeKeel } from '../../../test-support/harness.ts'
import { parserLoaded } from './parser-loaded.ts'

test('an answer in words alone loads no parser; a bash call loads it while the model writes the step', async () => {
  const keel = await makeKeel({
    steps: [
      { text: 'nothing to run' },
      // A plain command is judged without the parser: only the preload can load it. The pause before the step's next
      // call is the time the model would take to write the rest of the step.
      {
        delayMs: 100,
        toolCalls: [
          { name: 'bash', arguments: { command: 'echo plain' } },
          { name: 'todo_write', arguments: { todos: [{ content: 'look', status: 'in_progress' }] } },
        ],
      },
      { text: 'ran' },
    ],
  })
  try {
    const agent = keel.agent()
    expect((await agent.prompt('talk')).reason).toBe('completed')
    expect(parserLoaded()).toBe(false)
    let atCall: boolean | undefined
    keel.ctx.on('session/event', (_session, event) => {
      if (event.type === 'tool/call') atCall ??= parserLoaded()
    })
    expect((await agent.prompt('run')).reason).toBe('completed')
    expect(atCall).toBe(true)
  } finally {
    await keel.dispose()
  }
})
