// `keel -c` / `-r` open the session's log once: its recorded model is read from the session being opened, not from a
// read of the whole log before it (a 2,000-turn log is 2.2 MB to parse), and a model that cannot start leaves the
// session closed, not held.
import { afterEach, expect, test, vi } from 'vitest'
import { makeKeel, type Keel } from '../../../test-support/harness.ts'
import { openAgent } from '../src/agent.ts'
import { parse } from '../src/args.ts'

let keel: Keel | undefined
afterEach(async () => {
  await keel?.dispose()
  keel = undefined
})

/** A closed session in `keel.cwd` with a prompt, on the recorded model `spec`; its id. */
function closedSession(k: Keel, spec: string): string {
  const agent = k.agent({ fileNow: true })
  agent.session.append('session/model', { spec })
  agent.session.append('turn/start', { turn: 1, trigger: 'prompt' })
  agent.session.append(
    'user/message',
    { message: { role: 'user', content: [{ type: 'text', text: 'hello' }] } },
    { surfaceOp: { op: 'append' } },
  )
  agent.session.append('turn/end', { turn: 1, reason: 'completed' })
  k.ctx.agents.close(agent)
  return agent.id
}

test('-c resumes on the recorded model, reading the log once', async () => {
  keel = await makeKeel()
  const id = closedSession(keel, 'scripted/demo')
  const read = vi.spyOn(keel.ctx.sessions, 'read')
  const open = vi.spyOn(keel.ctx.sessions, 'open')
  const { flags } = parse(['-c', '--cwd', keel.cwd])
  const { agent, resumed } = await openAgent(keel.ctx, flags, { modelFlag: undefined })
  expect(resumed).toBe(true)
  expect(agent.id).toBe(id)
  expect(`${agent.model.provider}/${agent.model.model}`).toBe('scripted/demo')
  expect(read).not.toHaveBeenCalled()
  // The resume takes over the session opened for its model: the file is loaded once.
  expect(open.mock.results.map((result) => result.value.session)).toEqual([agent.session, agent.session])
})

test('a recorded model that cannot start leaves the session closed, to be opened again', async () => {
  keel = await makeKeel()
  const id = closedSession(keel, 'no-such-provider/model')
  const { flags } = parse(['-r', id, '--cwd', keel.cwd])
  await expect(openAgent(keel.ctx, flags, { modelFlag: undefined })).rejects.toThrow()
  expect(keel.ctx.sessions.get(id)).toBeUndefined()
  const { flags: typed } = parse(['-r', id, '--cwd', keel.cwd, '--model', 'scripted/demo'])
  expect((await openAgent(keel.ctx, typed, { modelFlag: 'scripted/demo' })).agent.id).toBe(id)
})
