// A validator interprets its schema for a tool's first calls and compiles it once the tool is called more
// (src/validate.ts): both engines must give every call the same verdict and the same lines.
import { describe, expect, test } from 'vitest'
import { Type } from 'typebox'
import { compileValidator } from '@keel/tools'

const schema = Type.Object(
  {
    todos: Type.Array(
      Type.Object(
        { content: Type.String(), status: Type.Union([Type.Literal('pending'), Type.Literal('done')]) },
        { additionalProperties: false },
      ),
    ),
  },
  { additionalProperties: false },
)
const valid = { todos: [{ content: 'a', status: 'done' }] }
const invalid = { todos: [{ content: 1, status: 'later', extra: true }], more: 1 }

describe('compileValidator', () => {
  test('the interpreted calls and the compiled ones accept and refuse the same arguments', () => {
    const validate = compileValidator(schema)
    const verdicts = Array.from({ length: 6 }, (_, i) => validate(i % 2 ? invalid : valid))
    expect(verdicts.filter((_, i) => i % 2 === 0)).toEqual([[], [], []])
    const refusals = verdicts.filter((_, i) => i % 2 === 1)
    expect(refusals[0]!.length).toBeGreaterThan(0)
    expect(refusals[0]!.join('\n')).toContain('todos[0].extra: is not an allowed property')
    expect(refusals[1]).toEqual(refusals[0])
    expect(refusals[2]).toEqual(refusals[0])
  })

  test('a tool refused from its first call onwards stays refused once compiled', () => {
    const validate = compileValidator(schema)
    for (let i = 0; i < 5; i++) expect(validate({ todos: 'no' })).toEqual(['todos: must be an array'])
  })
})
