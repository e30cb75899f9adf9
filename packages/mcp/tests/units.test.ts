import { execFileSync } from 'node:child_process'
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, test } from 'vitest'
import { expandEnv, readProjectServers, toolName, toToolContent, validateServers } from '../src/index.ts'

describe('configuration', () => {
  test('${VAR} and ${VAR:-default} expand in env, headers, args, url and command; a missing one names the key', () => {
    const env = { HOME_DIR: '/home/me', TOKEN: 't0k' }
    expect(
      expandEnv(
        { command: '${HOME_DIR}/bin/s', args: ['--x=${TOKEN}', '${NOPE:-fallback}'], env: { K: 'v-${TOKEN}' } },
        's',
        env,
      ),
    ).toEqual({ command: '/home/me/bin/s', args: ['--x=t0k', 'fallback'], env: { K: 'v-t0k' } })
    expect(expandEnv({ url: 'https://x/${TOKEN}', headers: { A: '${TOKEN}' } }, 's', env)).toEqual({
      url: 'https://x/t0k',
      headers: { A: 't0k' },
    })
    expect(() => expandEnv({ command: 'x', env: { KEY: '${MISSING_KEY}' } }, 'github', env)).toThrow(
      'mcp server github: env.KEY uses ${MISSING_KEY}, which is not set',
    )
  })

  test('a server needs a command or a url; names are what tool names allow; types are checked', () => {
    expect(() => validateServers({ a: {} }, 'f')).toThrow('f.a needs "command" (stdio) or "url" (http)')
    expect(() => validateServers({ a__b: { command: 'x' } }, 'f')).toThrow('must not contain "__"')
    expect(() => validateServers({ a: { command: 'x', args: 'not-a-list' } }, 'f')).toThrow(/^f\.a: /)
    expect(() => validateServers([], 'f')).toThrow('f must be an object of servers')
    expect(
      validateServers({ a: { command: 'x' }, b: { url: 'http://127.0.0.1/mcp', type: 'sse' } }, 'f'),
    ).toMatchObject({ a: { command: 'x' }, b: { type: 'sse' } })
  })

  test('.mcp.json is found at the project root (the nearest .git above the cwd)', () => {
    const root = mkdtempSync(join(tmpdir(), 'keel-mcp-root-'))
    mkdirSync(join(root, '.git'))
    mkdirSync(join(root, 'a', 'b'), { recursive: true })
    writeFileSync(join(root, '.mcp.json'), JSON.stringify({ mcpServers: { s: { command: 'srv' } } }))
    expect(readProjectServers(join(root, 'a', 'b'))).toMatchObject({
      file: join(root, '.mcp.json'),
      servers: { s: { command: 'srv' } },
    })
    // Empty, as the sandbox keeps a missing one while a command runs (its mount point): no servers.
    writeFileSync(join(root, '.mcp.json'), '')
    expect(readProjectServers(root)).toEqual({ servers: {} })
    writeFileSync(join(root, '.mcp.json'), '{ not json')
    expect(() => readProjectServers(root)).toThrow(`${join(root, '.mcp.json')}: not valid JSON`)
    // A FIFO or a link to a device is refused at once instead of blocking the read.
    rmSync(join(root, '.mcp.json'))
    execFileSync('mkfifo', [join(root, '.mcp.json')])
    expect(() => readProjectServers(root)).toThrow(`${join(root, '.mcp.json')}: not a file`)
    rmSync(join(root, '.mcp.json'))
    symlinkSync('/dev/zero', join(root, '.mcp.json'))
    expect(() => readProjectServers(root)).toThrow(`${join(root, '.mcp.json')}: not a file`)
  })

  test('tool names are mcp__<server>__<tool>, made safe and at most 64 characters', () => {
    expect(toolName('github', 'create_issue')).toBe('mcp__github__create_issue')
    expect(toolName('s', 'a.b/c d')).toBe('mcp__s__a_b_c_d')
    expect(toolName('s', 'x'.repeat(100))).toHaveLength(64)
  })
})

describe('results', () => {
  test('text, images, resources, links and structured content; other images and audio are described', () => {
    const out = toToolContent(
      {
        content: [
          { type: 'text', text: 'hi' },
          { type: 'image', data: 'iVBO', mimeType: 'image/png' },
          { type: 'image', data: 'x', mimeType: 'image/tiff' },
          { type: 'audio', data: 'x', mimeType: 'audio/wav' },
          { type: 'resource', resource: { uri: 'file:///a.txt', text: 'body' } },
          { type: 'resource', resource: { uri: 'file:///b.bin', blob: 'AAAA', mimeType: 'application/zip' } },
          { type: 'resource_link', uri: 'file:///c', name: 'c' },
        ],
      },
      25_000,
    )
    expect(out.content).toEqual([
      { type: 'text', text: 'hi' },
      { type: 'image', data: 'iVBO', mediaType: 'image/png' },
      { type: 'text', text: '[image of type image/tiff omitted: not a format models read]' },
      { type: 'text', text: '[audio (audio/wav) omitted: Keel does not send audio to models]' },
      { type: 'text', text: '[resource file:///a.txt]\nbody' },
      { type: 'text', text: '[resource file:///b.bin (application/zip, 4 base64 characters) not shown]' },
      { type: 'text', text: '[resource link file:///c "c"]' },
    ])
    expect(toToolContent({ content: [], structuredContent: { n: 1 } }, 100).content).toEqual([
      { type: 'text', text: '{\n  "n": 1\n}' },
    ])
    expect(toToolContent({ content: [], isError: true }, 100)).toEqual({
      isError: true,
      content: [{ type: 'text', text: '(the tool returned no content)' }],
    })
  })

  test('a result over the limit is cut with a note saying how much', () => {
    const out = toToolContent(
      {
        content: [
          { type: 'text', text: 'a'.repeat(30_000) },
          { type: 'text', text: 'tail' },
        ],
      },
      25_000,
    )
    const text = out.content.map((b) => (b.type === 'text' ? b.text : '')).join('')
    expect(text.startsWith('a'.repeat(25_000))).toBe(true)
    expect(text).toContain(
      '[5004 more characters of this result were cut: MCP results are limited to 25000 characters]',
    )
    expect(text).not.toContain('tail')
  })
})
