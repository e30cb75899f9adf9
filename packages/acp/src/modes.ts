import type { SessionModeState } from '@agentclientprotocol/sdk'
import { MODE_CYCLE, type PermissionMode } from '@keel/permissions'

// The permission modes as ACP session modes: advertised with each session, changed by `session/set_mode` (the
// person's choice in the editor, through `ctx.permissions.setMode`), and sent back as `current_mode_update`.

const DESCRIPTIONS: Record<PermissionMode, string> = {
  'read-only': 'Reads only; nothing is written and commands run in the read-only sandbox',
  plan: 'Explores read-only and proposes a plan; nothing changes until you approve it',
  ask: 'Asks before edits and commands that may change things',
  auto: 'Edits inside the project and runs commands in the sandbox without asking',
  yolo: 'Runs everything without asking, outside the sandbox',
}

/** The modes an editor may pick: the cycle the TUI's Shift+Tab steps through, and the mode in force if outside it. */
export function modeState(current: PermissionMode): SessionModeState {
  const ids = MODE_CYCLE.includes(current) ? MODE_CYCLE : [...MODE_CYCLE, current]
  return {
    currentModeId: current,
    availableModes: ids.map((id) => ({ id, name: id, description: DESCRIPTIONS[id] })),
  }
}
