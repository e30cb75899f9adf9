import { describe, expect, test } from 'vitest'
import { browserBundle } from '../../../test-support/browser-bundle.ts'

describe('@keel/permissions/decisions is browser-safe', () => {
  test('its module graph bundles for the browser: no node: import, no Node-only package', async () => {
    const bundle = await browserBundle('@keel/permissions/decisions')
    expect(bundle.errors).toEqual([])
    expect(bundle.inputs).toEqual(
      expect.arrayContaining(['packages/permissions/src/decisions.ts', 'packages/permissions/src/render.ts']),
    )
    expect(bundle.inputs.filter((file) => file.includes('node_modules'))).toEqual([])
  })
})
