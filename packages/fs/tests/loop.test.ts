import { mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterEach, describe, expect, test } from 'vitest'
import * as fsPlugin from '@keel/fs'
import { makeKeel, textOfContent, type Keel } from '../../../test-support/harness.ts'
import { applyUnifiedDiff, diffOfResult } from './patch.ts'

let keel: Keel | undefined
afterEach(async () => {
  await keel?.dispose()
  keel = undefined
})

const ORIGINAL = [
  'export function greet(name: string): string {',
  '  return `Hello, ${name}`',
  '}',
  '',
  'export function farewell(name: string): string {',
  '  return `Bye, ${name}`',
  '}',
  '',
].join('\n')

describe('file tools through the real agent loop', () => {
  test('the scripted model reads, edits and re-reads a file; the file changed exactly as the diff says', async () => {
    keel = await makeKeel({
      plugins: [[fsPlugin, {}]],
      steps: [
        {
          toolCalls: [
            { name: 'read', arguments: { path: 'src/greet.ts' } },
            { name: 'grep', arguments: { pattern: 'Bye' } },
          ],
        },
        {
          toolCalls: [
            {
              name: 'edit',
              arguments: {
                path: 'src/greet.ts',
                old_string: '  return `Bye, ${name}`',
                new_string: '  const polite = name.trim()\n  return `Goodbye, ${polite}`',
              },
            },
          ],
        },
        { toolCalls: [{ name: 'read', arguments: { path: 'src/greet.ts', offset: 5 } }] },
        { text: 'Changed farewell.' },
      ],
    })
    const file = join(keel.cwd, 'src', 'greet.ts')
    mkdirSync(join(keel.cwd, 'src'))
    writeFileSync(file, ORIGINAL)
    const agent = keel.agent()
    const result = await agent.prompt('make farewell say goodbye')
    expect(result.reason).toBe('completed')
    expect(result.text).toBe('Changed farewell.')

    const results = agent.session.events
      .filter((e) => e.type === 'tool/result')
      .map((e) => e.data as { content: { type: string; text?: string }[]; isError: boolean })
    expect(results.map((r) => r.isError)).toEqual([false, false, false, false])
    const [firstRead, grep, edit, reread] = results.map((r) => textOfContent(r.content))
    expect(firstRead).toBe(
      ORIGINAL.split('\n')
        .slice(0, -1)
        .map((line, i) => `${String(i + 1).padStart(6)}\t${line}`)
        .join('\n'),
    )
    expect(grep).toBe('src/greet.ts:6:   return `Bye, ${name}`')
    expect(edit!.split('\n')[0]).toBe('Edited src/greet.ts: 1 replacement at line 6 (+2 -1 lines).')

    const onDisk = readFileSync(file, 'utf8')
    expect(applyUnifiedDiff(ORIGINAL, diffOfResult(edit!))).toBe(onDisk)
    // The log carries the diff as data for front ends; the model's message holds the text alone.
    const logged = agent.session.events.filter((e) => e.type === 'tool/result').map((e) => e.data)
    expect(logged.map((data) => data.details?.kind)).toEqual([undefined, undefined, 'diff', undefined])
    expect(logged[2]!.details).toMatchObject({ path: 'src/greet.ts', added: 2, removed: 1, omitted: 0 })
    expect(JSON.stringify(agent.session.deriveMessages())).not.toContain('"details"')
    expect(onDisk).toBe(
      ORIGINAL.replace('  return `Bye, ${name}`', '  const polite = name.trim()\n  return `Goodbye, ${polite}`'),
    )
    expect(reread).toBe(
      [
        '     5\texport function farewell(name: string): string {',
        '     6\t  const polite = name.trim()',
        '     7\t  return `Goodbye, ${polite}`',
        '     8\t}',
      ].join('\n'),
    )

    // The model was offered the six tools, and the second request carried both read results.
    const offered = keel.model.requests[0]!.tools.map((tool) => tool.name)
    for (const name of fsPlugin.FS_TOOLS) expect(offered).toContain(name)
    const second = keel.model.requests[1]!
    expect(second.messages.filter((m) => m.role === 'tool')).toHaveLength(2)
  })

  test('an ambiguous edit reaches the model as an error it can correct, without touching the file', async () => {
    keel = await makeKeel({
      plugins: [[fsPlugin, {}]],
      steps: [
        { toolCalls: [{ name: 'edit', arguments: { path: 'a.txt', old_string: 'x', new_string: 'y' } }] },
        { toolCalls: [{ name: 'edit', arguments: { path: 'a.txt', old_string: 'x = 1', new_string: 'x = 2' } }] },
        { text: 'done' },
      ],
    })
    writeFileSync(join(keel.cwd, 'a.txt'), 'x = x + 1\nx = 1\n')
    const agent = keel.agent()
    await agent.prompt('edit it')
    const results = agent.session.events
      .filter((e) => e.type === 'tool/result')
      .map((e) => e.data as { content: { type: string; text?: string }[]; isError: boolean })
    expect(results[0]!.isError).toBe(true)
    expect(textOfContent(results[0]!.content)).toBe(
      'Error: old_string matches 3 times in a.txt (lines 1, 2); add surrounding lines to make it unique, or set replace_all to change every one',
    )
    // The model retried with more context; the request after the failure carried the error text.
    expect(results[1]!.isError).toBe(false)
    expect(JSON.stringify(keel.model.requests[1]!.messages)).toContain('old_string matches 3 times')
    expect(readFileSync(join(keel.cwd, 'a.txt'), 'utf8')).toBe('x = x + 1\nx = 2\n')
  })
})
