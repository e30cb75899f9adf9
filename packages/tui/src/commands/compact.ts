import type { Compaction } from '@keel/compaction'
import { escapeLine } from '../safe.ts'
import type { Command } from './command.ts'

/** Asks @keel/compaction (when composed) to summarise older turns; the marker comes from the log. */
export const compact: Command = {
  name: 'compact',
  description: 'Summarise older turns now to free context (applies before the next request)',
  run: async (actions) => {
    const compaction: Compaction | undefined = actions.ctx.get('compaction')
    if (!compaction) return actions.note('warn', 'Compaction is not loaded (add @keel/compaction to the composition).')
    actions.note('info', 'Compacting…')
    const outcome = await compaction.compact(actions.agent)
    actions.note(
      outcome.ok ? 'info' : 'warn',
      outcome.ok
        ? `Summarised ${outcome.summarised} messages: ~${outcome.before} → ~${outcome.after} tokens${outcome.applied === 'next-request' ? ' (takes effect with your next message)' : ''}.`
        : `Not compacted: ${escapeLine(outcome.error ?? 'unknown reason')}`,
    )
  },
}
