// A sandboxed `bash` call runs in a sandbox started for it after the session's last one (src/spares.ts), only while
// that sandbox is still what a wrap made now would be: a repository made, a protected file replaced or a placeholder
// removed since it started make the call wrap afresh, so the protection is the one the disk asks for at the call.
// Real bubblewrap: the spare is a bwrap waiting on stdin.
import { execFileSync } from 'node:child_process'
import { existsSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterEach, describe, expect, test } from 'vitest'
import type { SessionEvent } from '@keel/session'
import * as checkpointPlugin from '@keel/checkpoint'
import * as permissionsPlugin from '@keel/permissions'
import * as sandboxPlugin from '@keel/sandbox'
import type { SandboxService } from '@keel/sandbox'
import { Shadow } from '../../checkpoint/src/shadow.ts'
import { makeKeel, textOfContent, waitFor, type Keel } from '../../../test-support/harness.ts'
import { HAS_BWRAP, skipWithout } from '../../../test-support/system-tools.ts'

let keel: Keel | undefined
afterEach(async () => {
  await keel?.dispose()
  keel = undefined
})

type Steps = NonNullable<Parameters<typeof makeKeel>[0]>['steps']

/**
 * A turn in auto mode (commands in the workspace sandbox) through the real loop, with the service's fresh wraps and
 * prepared sandboxes counted. `between` runs at the reasoning that opens step `at` (1-based), 300 ms after the step
 * before it ended, once the spare made after that step's command is made, and 300 ms before the step's call.
 */
async function turn(
  steps: Steps,
  options: {
    between?: { at: number; change: (cwd: string) => void }
    before?: (cwd: string) => void
    plugins?: Plugins
  } = {},
) {
  const { between, before, plugins: extra = [] } = options
  const { k, counts, lastPrepared } = await counted(
    steps!.map((step, i) => (between && i + 1 === between.at ? { reasoning: '.', delayMs: 300, ...step } : step)),
    extra,
  )
  let requests = 0
  let started = false
  let changed = false
  k.ctx.on('agent/request', () => void requests++)
  k.ctx.on('agent/delta', (_agent, delta) => {
    if (between && !started && delta.kind === 'reasoning' && requests === between.at) {
      started = true
      // The call comes one pause (300 ms) after this reasoning.
      void lastPrepared().then(() => {
        between.change(k.cwd)
        changed = true
      })
    }
  })
  before?.(k.cwd)
  const agent = k.agent()
  const result = await agent.prompt('go')
  expect(result.reason).toBe('completed')
  if (between) expect(changed).toBe(true)
  return { k, agent, counts, results: resultTexts(agent) }
}

/** Keel in auto mode with the real sandbox, the service's fresh wraps and prepared sandboxes counted. */
async function counted(steps: Steps, extra: Plugins = []) {
  keel = await makeKeel({
    steps,
    plugins: [
      [permissionsPlugin, { mode: 'auto', allow: [], deny: [], sandbox: { allowedDomains: [] } }],
      [sandboxPlugin, { allowedDomains: [] }],
      ...extra,
    ],
  })
  const k = keel
  await waitFor(() => k.ctx.get('permissions') && k.ctx.get('sandbox'), 'plugins')
  const service = k.ctx.get('sandbox') as SandboxService
  const counts = { wraps: 0, prepared: 0 }
  const wrap = service.wrap.bind(service)
  const prepare = service.prepare.bind(service)
  service.wrap = (...args) => {
    counts.wraps++
    return wrap(...args)
  }
  // The last spare asked for: a change to the disk waits until it is made (its mounts decided), whatever the load.
  let last: Promise<unknown> = Promise.resolve()
  service.prepare = (...args) => {
    counts.prepared++
    const made = prepare(...args)
    last = made.catch(() => {})
    return made
  }
  return { k, counts, lastPrepared: () => last }
}

const resultTexts = (agent: { session: { events: readonly SessionEvent[] } }) =>
  agent.session.events
    .filter((e): e is SessionEvent<'tool/result'> => e.type === 'tool/result')
    .map((e) => textOfContent(e.data.content))

type Plugins = NonNullable<NonNullable<Parameters<typeof makeKeel>[0]>['plugins']>

const run = (command: string, timeout?: number) => ({
  toolCalls: [{ name: 'bash', arguments: { command, ...(timeout ? { timeout } : {}) } }],
})

/** bwrap processes this process started (a spare waiting, a command running). */
function sandboxes(): number[] {
  return readdirSync('/proc')
    .filter((name) => /^\d+$/.test(name))
    .filter((pid) => {
      try {
        const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
        const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1])
        return ppid === process.pid && readFileSync(`/proc/${pid}/comm`, 'utf8').trim() === 'bwrap'
      } catch {
        return false
      }
    })
    .map(Number)
}

describe.skipIf(skipWithout('bubblewrap', HAS_BWRAP, 'the spare sandbox tests'))(
  'a sandbox started before its command',
  () => {
    test("a turn's later commands run in spares, with their output, exit code, leftovers, temp folder and timeout", async () => {
      // While the model writes its answer, the spare made after the last command waits, its placeholders on disk.
      const during = { sandboxes: 0, placeholder: false }
      const { k, counts, results } = await turn(
        [
          run('echo one'),
          run('printf "%s\\n" "$TMPDIR"; echo err >&2; sleep 60 & exit 3'),
          run('echo three > made.txt; cat made.txt'),
          run('sleep 30', 1),
          { text: 'done' },
        ],
        {
          between: {
            at: 5,
            change: (cwd) => {
              during.sandboxes = sandboxes().length
              during.placeholder = existsSync(join(cwd, '.bashrc'))
            },
          },
        },
      )
      expect(during).toEqual({ sandboxes: 1, placeholder: true })
      // No fresh wrap: the first ran in the spare made as the model began writing it (from the permission mode), each
      // other in the one made after the command before.
      expect(counts.wraps).toBe(0)
      expect(counts.prepared).toBeGreaterThanOrEqual(3)
      expect(results[0]).toContain('one')
      expect(results[1]).toContain('err')
      expect(results[1]).toContain('[exit code 3')
      expect(results[1]).toContain('[killed 1 background process the command left running]')
      expect(results[2]).toContain('three')
      expect(readFileSync(join(k.cwd, 'made.txt'), 'utf8')).toBe('three\n')
      expect(results[3]).toContain('[killed after the 1 s timeout]')
      // The spare left after the last command dies with the turn, and the runtime removes its placeholders.
      await waitFor(() => sandboxes().length === 0, 'no sandbox left running')
      await waitFor(() => !existsSync(join(k.cwd, '.bashrc')), 'the placeholders gone')
    }, 60_000)

    test("each turn's first command runs in a spare made as the model began writing it; none waits between turns", async () => {
      const { k, counts } = await counted([run('echo one'), { text: 'first' }, run('echo two'), { text: 'second' }])
      const agent = k.agent()
      expect((await agent.prompt('one')).reason).toBe('completed')
      // Between turns nothing waits: no sandbox, no placeholder on disk.
      await waitFor(() => sandboxes().length === 0, 'no sandbox between turns')
      expect(existsSync(join(k.cwd, '.bashrc'))).toBe(false)
      expect((await agent.prompt('two')).reason).toBe('completed')
      const texts = resultTexts(agent)
      expect(texts[1]).toContain('two')
      expect(counts.wraps).toBe(0)
    }, 60_000)

    test('a cancel reaches the command in a spare', async () => {
      const { k, counts } = await counted([run('true'), run('sleep 30'), { text: 'never' }])
      const agent = k.agent()
      k.ctx.on('session/event', (_session, event) => {
        if (event.type === 'tool/call' && JSON.stringify(event.data).includes('sleep 30'))
          setTimeout(() => agent.cancel(), 300)
      })
      expect((await agent.prompt('go')).reason).toBe('aborted')
      const texts = resultTexts(agent)
      expect(texts[1]).toContain('[cancelled by the user]')
      expect(counts.wraps).toBe(0)
      await waitFor(() => sandboxes().length === 0, 'no sandbox left running')
    }, 60_000)

    test('a repository made since the spare started is protected: the call wraps afresh', async () => {
      const { k, counts, results } = await turn(
        [
          run('true'),
          run(
            'echo EVIL > sub/.git/hooks/pre-commit && echo WROTE; echo "[core]" >> sub/.git/config && echo WROTE; echo end',
          ),
          { text: 'done' },
        ],
        { between: { at: 2, change: (cwd) => execFileSync('git', ['init', '-q', join(cwd, 'sub')]) } },
      )
      expect(results[1]).toContain('end')
      expect(results[1]).not.toContain('WROTE')
      expect(existsSync(join(k.cwd, 'sub/.git/hooks/pre-commit'))).toBe(false)
      expect(counts.wraps).toBe(1)
    }, 60_000)

    test('a protected file replaced since the spare started is the one read, and stays unwritable', async () => {
      const { results, counts } = await turn(
        [run('true'), run('cat .mcp.json; echo x > .mcp.json && echo WROTE'), { text: 'done' }],
        {
          before: (cwd) => writeFileSync(join(cwd, '.mcp.json'), '{"old":true}\n'),
          between: {
            at: 2,
            change: (cwd) => {
              // An editor's save: a new file renamed over the old one. The spare's bind is on the file it was made on.
              writeFileSync(join(cwd, '.mcp.json.tmp'), '{"new":true}\n')
              renameSync(join(cwd, '.mcp.json.tmp'), join(cwd, '.mcp.json'))
            },
          },
        },
      )
      expect(results[1]).toContain('{"new":true}')
      expect(results[1]).not.toContain('WROTE')
      expect(counts.wraps).toBe(1)
    }, 60_000)

    test('a placeholder removed since the spare started takes its mount with it: the call wraps afresh', async () => {
      let before = 'unread'
      const { k, results, counts } = await turn(
        [run('true'), run('echo EVIL > .bashrc && echo WROTE; echo end'), { text: 'done' }],
        {
          between: {
            at: 2,
            change: (cwd) => {
              // The spare's mount point for the missing .bashrc, on the host.
              before = readFileSync(join(cwd, '.bashrc'), 'utf8')
              rmSync(join(cwd, '.bashrc'))
            },
          },
        },
      )
      expect(before).toBe('')
      expect(results[1]).toContain('end')
      expect(results[1]).not.toContain('WROTE')
      expect(existsSync(join(k.cwd, '.bashrc')) ? readFileSync(join(k.cwd, '.bashrc'), 'utf8') : '').toBe('')
      expect(counts.wraps).toBe(1)
    }, 60_000)

    test('no snapshot holds a sandbox placeholder, taken while a spare waits', async () => {
      const { k, agent, counts } = await turn(
        [
          run('echo one'),
          { toolCalls: [{ name: 'todo_write', arguments: { todos: [{ content: 'look', status: 'in_progress' }] } }] },
          run('echo two > two.txt'),
          run('echo three > three.txt'),
          { text: 'done' },
        ],
        { plugins: [[checkpointPlugin, { enabled: true, maxFiles: 50_000, maxBytes: 500_000_000 }]] },
      )
      expect(counts.wraps).toBe(0)
      await k.ctx.parallel('agent/before-close', agent)
      const gitDir = new Shadow(k.cwd, k.home).gitDir
      const snapshots = agent.session.events.filter((e) => e.type === 'checkpoint/snapshot')
      expect(snapshots.length).toBeGreaterThanOrEqual(2)
      const trees = snapshots.map((snapshot) =>
        execFileSync(
          'git',
          ['--git-dir', gitDir, 'ls-tree', '-r', '--name-only', (snapshot.data as { tree: string }).tree],
          {
            encoding: 'utf8',
          },
        ),
      )
      expect(trees.at(-1)).toContain('three.txt')
      for (const held of trees) expect(held).not.toMatch(/(^|\n)(\.bashrc|\.mcp\.json|\.gitconfig|\.profile)(\n|$)/)
    }, 60_000)
  },
)
