// The job tools go with bash: an agent that may not run commands is neither offered them nor able to call them.
import { afterEach, expect, test } from 'vitest'
import { makeKeel, textOfContent, type Keel } from '../../../test-support/harness.ts'

let keel: Keel | undefined
afterEach(async () => {
  await keel?.dispose()
  keel = undefined
})

test('without bash, job_output and job_kill are not offered and a call to one is refused', async () => {
  keel = await makeKeel({
    steps: [
      { toolCalls: [{ name: 'job_output', arguments: { id: 'job-1' } }] },
      { text: 'done' },
      { text: 'with bash' },
    ],
  })
  const limited = keel.agent({ excludeTools: ['bash'] })
  await limited.prompt('try the jobs')
  expect(keel.model.requests[0]!.tools.map((tool) => tool.name).sort()).toEqual(['propose_plan', 'todo_write'])
  const result = limited.session.events.find((event) => event.type === 'tool/result')
  expect(result?.type === 'tool/result' && textOfContent(result.data.content)).toBe(
    'Error: tool job_output is not available to this agent',
  )
  await keel.agent().prompt('all tools')
  expect(keel.model.requests[2]!.tools.map((tool) => tool.name).sort()).toEqual([
    'bash',
    'job_kill',
    'job_output',
    'propose_plan',
    'todo_write',
  ])
})
