// Background jobs: commands started by `bash({ background: true })` that outlive the call, owned by the session that
// started them. They run through runCommand like any call (same process group, marker, exit hook), so Keel's exit
// kills them too; `keel -p` never waits on them.
import type { Session } from '@keel/session'
import type { SandboxLevel } from '@keel/tools'
import { UnreadOutput } from './job-output.ts'
import { runCommand, type RunOutcome } from './run.ts'

/** Why a job was stopped. */
export type JobKillReason = 'job_kill' | 'session-end' | 'rewind' | 'shutdown'

declare module '@keel/session' {
  interface SessionEventMap {
    /** `bash({ background: true })` started a job; written inside the call that started it. */
    'job/start': { id: string; command: string; sandbox: SandboxLevel }
    /**
     * A background job's shell ended, by itself or after a `job/kill`; often written between turns (a server that
     * stops after the turn ended). `code` and `signal` are null when it was killed or could not be reaped.
     */
    'job/exit': { id: string; code: number | null; signal: string | null; seconds: number }
    /** A background job was stopped: by `job_kill`, its session's end, a rewind, or Keel shutting down. */
    'job/kill': { id: string; why: JobKillReason }
  }
}

interface Job {
  id: string
  command: string
  session: Session
  output: UnreadOutput
  controller: AbortController
  outcome?: RunOutcome
  /** The model has seen the job end: it is forgotten. */
  reported: boolean
  ended: Promise<void>
  /** Wakes a waiting `job_output`. */
  wake?: () => void
}

export interface JobLimits {
  maxJobs: number
  /** Characters of unread output kept per job. */
  outputLimit: number
  /** How long a killed job gets between SIGTERM and SIGKILL. */
  killGraceMs: number
}

export interface JobLaunch {
  session: Session
  command: string
  sandbox: SandboxLevel
  file: string
  args: string[]
  cwd: string
  env: Record<string, string>
  /** Runs once the job has ended (the sandbox's teardown). */
  dispose(): Promise<void>
}

/** setTimeout's largest delay: a job has no timeout of its own, its session bounds it. */
const NO_TIMEOUT_MS = 2 ** 31 - 1

function append(session: Session, type: 'job/exit' | 'job/kill', data: never): void {
  // The session may be closed already (its end is what killed the job): the kill still happens, unlogged.
  try {
    session.append(type, data)
  } catch {}
}

export class Jobs {
  private readonly jobs = new Map<string, Job>()
  private next = 1

  constructor(private readonly limits: JobLimits) {}

  private of(session: Session): Job[] {
    return [...this.jobs.values()].filter((job) => job.session === session)
  }

  /** The session's jobs the model can still ask about, for error messages. */
  describe(session: Session): string {
    const jobs = this.of(session)
    if (!jobs.length) return 'this session has no background jobs'
    return `this session's jobs: ${jobs.map((job) => `${job.id} (${job.outcome ? 'ended, output unread' : 'running'})`).join(', ')}`
  }

  running(session?: Session): number {
    return [...this.jobs.values()].filter((job) => !job.outcome && (!session || job.session === session)).length
  }

  /** Starts a job, or says why not (too many running). */
  start(launch: JobLaunch): { id: string } | { error: string } {
    const live = this.of(launch.session).filter((job) => !job.outcome)
    if (live.length >= this.limits.maxJobs)
      return {
        error: `at most ${this.limits.maxJobs} background jobs may run at once (shell.maxJobs); running: ${live.map((job) => `${job.id} (${job.command})`).join(', ')}; stop one with job_kill`,
      }
    const id = `job-${this.next++}`
    const controller = new AbortController()
    const job: Job = {
      id,
      command: launch.command,
      session: launch.session,
      output: new UnreadOutput(this.limits.outputLimit),
      controller,
      reported: false,
      ended: Promise.resolve(),
    }
    launch.session.append('job/start', { id, command: launch.command, sandbox: launch.sandbox })
    job.ended = runCommand({
      file: launch.file,
      args: launch.args,
      cwd: launch.cwd,
      env: launch.env,
      timeoutMs: NO_TIMEOUT_MS,
      signal: controller.signal,
      termGraceMs: this.limits.killGraceMs,
      onText: (text) => {
        job.output.push(text)
        job.wake?.()
      },
    }).then(async (outcome) => {
      await launch.dispose().catch(() => {})
      job.outcome = outcome
      const exited = outcome.kind === 'exited' ? outcome : undefined
      append(launch.session, 'job/exit', {
        id,
        code: exited?.code ?? null,
        signal: exited?.signal ?? null,
        seconds: 'seconds' in outcome ? outcome.seconds : 0,
      } as never)
      job.wake?.()
    })
    this.jobs.set(id, job)
    return { id }
  }

  /**
   * What the job printed since the last read, waiting up to `waitMs` for something new while it runs. A job whose
   * end has been reported is forgotten.
   */
  async read(
    session: Session,
    id: string,
    waitMs: number,
    signal: AbortSignal,
  ): Promise<{ text: string; dropped: number; outcome?: RunOutcome } | { error: string }> {
    const job = this.jobs.get(id)
    if (!job || job.session !== session) return { error: `no background job ${id}; ${this.describe(session)}` }
    if (!job.outcome && waitMs > 0) {
      await new Promise<void>((done) => {
        const finish = () => {
          clearTimeout(timer)
          signal.removeEventListener('abort', finish)
          job.wake = undefined
          done()
        }
        const timer = setTimeout(finish, waitMs)
        signal.addEventListener('abort', finish, { once: true })
        job.wake = finish
      })
    }
    const taken = job.output.take()
    if (job.outcome) this.jobs.delete(id)
    return { ...taken, outcome: job.outcome }
  }

  /** Stops a job and everything it started: SIGTERM, then SIGKILL after the grace period. */
  async kill(session: Session, id: string, why: JobKillReason): Promise<Job | { error: string }> {
    const job = this.jobs.get(id)
    if (!job || job.session !== session) return { error: `no background job ${id}; ${this.describe(session)}` }
    if (!job.outcome) {
      append(session, 'job/kill', { id, why } as never)
      job.controller.abort()
      await job.ended
    }
    // job_kill's result reports the end: the id is gone, as after a job_output that read it.
    this.jobs.delete(id)
    return job
  }

  /** Kills every running job of a session (it ended, or was rewound) and forgets them all. */
  async endSession(session: Session, why: JobKillReason): Promise<void> {
    const jobs = this.of(session)
    await Promise.all(jobs.map((job) => this.kill(session, job.id, why)))
    for (const job of jobs) this.jobs.delete(job.id)
  }

  async endAll(why: JobKillReason): Promise<void> {
    const sessions = new Set([...this.jobs.values()].map((job) => job.session))
    await Promise.all([...sessions].map((session) => this.endSession(session, why)))
  }
}
