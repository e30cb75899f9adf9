import type { Command } from './command.ts'

/** A long session opens with its latest entries only (transcript.ts, `WINDOW_LINES`); this draws earlier ones. */
export const history: Command = {
  name: 'history',
  description: 'Show earlier parts of a long session that the transcript does not draw',
  run: (actions) => {
    const shown = actions.showEarlier()
    actions.note(
      'info',
      shown
        ? `Showing ${shown} earlier entr${shown === 1 ? 'y' : 'ies'}${actions.hiddenEntries() ? `; ${actions.hiddenEntries()} more with /history` : ''}.`
        : 'The whole session is shown.',
    )
  },
}
