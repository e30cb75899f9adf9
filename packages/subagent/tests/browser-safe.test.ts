import { describe, expect, test } from 'vitest'
import { browserBundle } from '../../../test-support/browser-bundle.ts'

describe('@keel/subagent/plans is browser-safe', () => {
  test('its module graph bundles for the browser: no node: import, no Node-only package', async () => {
    const bundle = await browserBundle('@keel/subagent/plans')
    expect(bundle.errors).toEqual([])
    expect(bundle.inputs).toEqual(
      expect.arrayContaining(['packages/subagent/src/plans.ts', 'packages/subagent/src/projection.ts']),
    )
    expect(bundle.inputs.filter((file) => file.includes('node_modules'))).toEqual([])
  })
})
