import { describe, expect, test } from 'vitest'
import { browserBundle } from '../../../test-support/browser-bundle.ts'
import { ERROR_LINE_MAX, errorLine, flattenLine } from '@keel/session/text'

describe('@keel/session/text', () => {
  test('bundles for the browser: no node: import, no package at all', async () => {
    const bundle = await browserBundle('@keel/session/text')
    expect(bundle.errors).toEqual([])
    expect(bundle.inputs.sort()).toEqual([
      'packages/session/src/escape.ts',
      'packages/session/src/outcome.ts',
      'packages/session/src/text.ts',
    ])
  })

  test('errorLine keeps the first line of a message, cut to the limit', () => {
    expect(errorLine(new Error('no such file\n    at open (fs.js:1)'))).toBe('no such file')
    expect(errorLine('plain string')).toBe('plain string')
    expect(errorLine(new Error('x'.repeat(2000)))).toHaveLength(ERROR_LINE_MAX)
    expect(errorLine(new Error('abcdef'), 3)).toBe('abc')
  })

  test('flattenLine keeps every word on one line and cuts only when told', () => {
    expect(flattenLine('  Run\n\tthe   tests \r\n')).toBe('Run the tests')
    expect(flattenLine('a'.repeat(400))).toHaveLength(400)
    expect(flattenLine(`${'a'.repeat(400)}`, 300)).toBe(`${'a'.repeat(297)}...`)
    expect(flattenLine('short', 300)).toBe('short')
  })
})
