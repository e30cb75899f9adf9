import { defineTool, Type, type ToolOutput } from '@keel/tools'
import type { RunOutcome } from './run.ts'
import type { Jobs } from './jobs.ts'

/** The longest a `job_output` waits for new output: a call stays bounded whatever the model asks. */
const MAX_WAIT_MS = 30_000

const error = (text: string): ToolOutput => ({ isError: true, content: [{ type: 'text', text: `Error: ${text}` }] })

function ending(outcome: RunOutcome): string {
  if (outcome.kind === 'exited')
    return outcome.code === null
      ? `[ended: killed by ${outcome.signal} · ${outcome.seconds.toFixed(1)} s]`
      : `[ended: exit code ${outcome.code} · ${outcome.seconds.toFixed(1)} s]`
  if (outcome.kind === 'spawn-error') return `[could not start: ${outcome.message}]`
  return `[ended: killed · ${outcome.seconds.toFixed(1)} s]`
}

// Both tools touch only jobs the session already started under its own permission check: they run in every mode.
export function jobOutputTool(jobs: Jobs) {
  return defineTool({
    name: 'job_output',
    // A job is started by bash: an agent that may not run commands has none to read or stop.
    offeredWith: 'bash',
    description: `Read what a background job (started with bash and background: true) printed since the last read, and whether it still runs. wait_ms (at most ${MAX_WAIT_MS}) waits for new output first. Once a job's end has been read, its id is gone.`,
    parameters: Type.Object(
      {
        id: Type.String({ description: 'The job id bash returned, e.g. job-1.' }),
        wait_ms: Type.Optional(Type.Number({ minimum: 0, description: 'Wait this long for new output.' })),
      },
      { additionalProperties: false },
    ),
    access: () => ({ kind: 'read' }),
    presentCall: (args) => ({ title: `output of ${args.id}`, kind: 'read', rawInput: args }),
    async execute(args, exec) {
      if (!exec.agent) return error('job_output must be called by an agent: jobs belong to a session')
      const read = await jobs.read(exec.agent.session, args.id, Math.min(args.wait_ms ?? 0, MAX_WAIT_MS), exec.signal)
      if ('error' in read) return error(read.error)
      const parts: string[] = []
      if (read.dropped) parts.push(`[${read.dropped} characters of earlier output dropped]`)
      const body = read.text.replace(/\s+$/, '')
      if (body) parts.push(body)
      parts.push(read.outcome ? ending(read.outcome) : `[${args.id} is still running]`)
      return parts.join('\n')
    },
  })
}

export function jobKillTool(jobs: Jobs) {
  return defineTool({
    name: 'job_kill',
    offeredWith: 'bash',
    description:
      'Stop a background job and every process it started (SIGTERM, then SIGKILL after a short grace period).',
    parameters: Type.Object(
      { id: Type.String({ description: 'The job id bash returned, e.g. job-1.' }) },
      { additionalProperties: false },
    ),
    access: () => ({ kind: 'read' }),
    presentCall: (args) => ({ title: `stop ${args.id}`, kind: 'execute', rawInput: args }),
    async execute(args, exec) {
      if (!exec.agent) return error('job_kill must be called by an agent: jobs belong to a session')
      const killed = await jobs.kill(exec.agent.session, args.id, 'job_kill')
      if ('error' in killed) return error(killed.error)
      return `${args.id} stopped ${killed.outcome ? ending(killed.outcome) : ''}`.trim()
    },
  })
}
