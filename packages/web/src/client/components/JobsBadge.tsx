import { useSyncExternalStore } from 'react'
import { jobCountWords, jobLine } from '@keel/door/words'
import type { ConversationStore } from '../store.ts'

/** The session's running background jobs: a count, each one listed (id, age, command) under it on hover. */
export function JobsBadge({ store }: { store: ConversationStore }) {
  const { jobs } = useSyncExternalStore(store.subscribe, store.getSnapshot)
  const count = jobCountWords(jobs.length)
  if (!count) return null
  const now = Date.now()
  return (
    <details className="jobs" data-testid="jobs">
      <summary>{count}</summary>
      <ul>
        {jobs.map((job) => (
          <li key={job.id} data-testid="job">
            {jobLine(job, now)}
          </li>
        ))}
      </ul>
    </details>
  )
}
