import { describe, expect, test } from 'vitest'
import { browserBundle } from '../../../test-support/browser-bundle.ts'

describe('the door layer the web page shares is browser-safe', () => {
  test.each([
    ['@keel/door/transcript', 'packages/door/src/transcript.ts'],
    ['@keel/door/words', 'packages/door/src/words.ts'],
    ['@keel/door/call-back', 'packages/door/src/call-back.ts'],
    ['@keel/door/shell-message', 'packages/door/src/shell-message.ts'],
  ])('%s bundles for the browser: no node: import, no Node-only package', async (entry, file) => {
    const bundle = await browserBundle(entry)
    expect(bundle.errors).toEqual([])
    expect(bundle.inputs).toContain(file)
    expect(bundle.inputs.filter((input) => input.includes('node_modules'))).toEqual([])
  })
})
