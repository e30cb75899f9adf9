import { describe, expect, test } from 'vitest'
import { browserBundle } from '../../../test-support/browser-bundle.ts'

describe('@keel/todo/plan is browser-safe', () => {
  test('its module graph bundles for the browser: no node: import, no Node-only package', async () => {
    const bundle = await browserBundle('@keel/todo/plan')
    expect(bundle.errors).toEqual([])
    expect(bundle.inputs).toContain('packages/todo/src/plan.ts')
    expect(bundle.inputs.filter((file) => file.includes('node_modules'))).toEqual([])
  })

  test('the check fails on the package entry, which reads session files through Node', async () => {
    const bundle = await browserBundle('@keel/todo')
    expect(bundle.errors.some((error) => error.includes('"node:fs"'))).toBe(true)
  })
})
