import type { Context } from 'cordis'
import { nextMode } from '@keel/permissions'
import type { Session } from '@keel/session'

/**
 * Shift+Tab: the next permission mode in `MODE_CYCLE` (@keel/permissions), recorded on the open session's log. The
 * footer follows the `permission/mode` event; `say` gets the one line for the transcript.
 */
export function cycleMode(ctx: Context, session: Session, say: (line: string) => void): void {
  const permissions = ctx.get('permissions')
  if (!permissions) {
    say('Permissions are not loaded: there is no mode to change.')
    return
  }
  const previous = permissions.mode
  const mode = nextMode(previous)
  permissions.setMode(mode, [session])
  say(`Mode: ${mode} (was ${previous}); shift+tab changes it again.`)
}
