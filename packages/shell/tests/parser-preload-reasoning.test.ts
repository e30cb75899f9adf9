// The shell parser is loaded while the model reasons, before it begins any call (parser-preload.test.ts says why; a
// process of its own for the same reason).
import { expect, test } from 'vitest'
import { makeKeel } from '../../../test-support/harness.ts'
import { parserLoaded } from './parser-loaded.ts'

test('reasoning loads the parser before the bash call it leads to is written', async () => {
  const keel = await makeKeel({
    steps: [
      { reasoning: 'let me look first', delayMs: 50, toolCalls: [{ name: 'bash', arguments: { command: 'echo a' } }] },
      { text: 'ran' },
    ],
  })
  try {
    let atStart: boolean | undefined
    keel.ctx.on('agent/delta', (_agent, delta) => {
      if (delta.kind === 'tool-input') atStart ??= parserLoaded()
    })
    expect(parserLoaded()).toBe(false)
    expect((await keel.agent().prompt('run')).reason).toBe('completed')
    expect(atStart).toBe(true)
  } finally {
    await keel.dispose()
  }
})
