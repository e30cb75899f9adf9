import { jobLine, NO_JOBS } from '@keel/door/words'
import type { Command } from './command.ts'

/** Lists the session's running background jobs (the footer counts them); the model stops them with job_kill. */
export const jobs: Command = {
  name: 'jobs',
  description: 'List the background jobs running in this session',
  run: (actions) => {
    const running = actions.jobs()
    const now = Date.now()
    if (!running.length) actions.note('info', `${NO_JOBS}.`)
    for (const job of running) actions.note('info', jobLine(job, now))
  },
}
