import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, test } from 'vitest'
import * as permissions from '@keel/permissions'
import { KeelLoader } from '@keel/cli'
import { useBoot } from '../../../test-support/boot.ts'

describe('@keel/permissions as a plugin', () => {
  const fixture = useBoot('keel-permissions-loader-')

  test('named exports only: the Loader keeps the module as is', () => {
    expect('default' in permissions).toBe(false)
    const loader = Object.create(KeelLoader.prototype) as KeelLoader
    expect(loader.unwrapExports(permissions)).toBe(permissions)
  })

  test('loads through the real Loader from a composition file, with mode and rules from its config', async () => {
    const composition = join(fixture.dir(), 'keel.yml')
    writeFileSync(
      composition,
      [
        "- id: tools\n  name: '@keel/tools'",
        "- id: permissions\n  name: '@keel/permissions'\n  config:\n    mode: read-only\n    allow: ['bash(npm test:*)', 'not a rule(']\n    deny: ['bash(rm:*)']",
      ].join('\n') + '\n',
    )
    const ctx = await fixture.boot({ composition, require: ['tools', 'permissions'] })
    const service = ctx.get('permissions')!
    expect(service.mode).toBe('read-only')
    expect(service.rules).toEqual({ allow: ['bash(npm test:*)'], deny: ['bash(rm:*)'] })
    expect(service.problems).toEqual([expect.stringMatching(/not a rule: "not a rule\("/)])
  })

  test('a mode that is not one of the four fails the start with a line naming it', async () => {
    const composition = join(fixture.dir(), 'bad.yml')
    writeFileSync(
      composition,
      "- id: tools\n  name: '@keel/tools'\n- id: permissions\n  name: '@keel/permissions'\n  config:\n    mode: careless\n",
    )
    await expect(fixture.boot({ composition, require: ['tools', 'permissions'] })).rejects.toThrow(/careless|mode/)
  })

  test('the shipped composition loads it', async () => {
    const ctx = await fixture.boot({ require: ['sessions', 'tools', 'llm', 'agents', 'permissions'] })
    expect(ctx.get('permissions')).toBeDefined()
  })
})
