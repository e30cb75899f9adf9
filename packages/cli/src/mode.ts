// The permission mode a run starts in; apart from policy.ts so print mode can check its flags before anything boots.
import { isPermissionMode, PERMISSION_MODES, type PermissionMode } from '@keel/permissions/types'
import { UsageError, type Command, type Flags } from './args.ts'

/** Where the effective mode came from, for the one line that explains it when asked. */
export type ModeSource = 'flag' | 'env' | 'settings' | 'default'

/** The mode each front door starts in when nothing else says: print mode has no one to ask. */
function doorDefault(command: Command['kind']): PermissionMode {
  return command === 'print' ? 'auto' : 'ask'
}

/**
 * The effective permission mode, first found wins: `--mode` / `--yolo`, then `$KEEL_MODE`, then the plugin
 * config's `mode` (from the settings files), then the front door's default.
 */
export function resolveMode(
  flags: Flags,
  env: NodeJS.ProcessEnv,
  configured: PermissionMode | undefined,
  command: Command['kind'],
): { mode: PermissionMode; source: ModeSource } {
  const valid = PERMISSION_MODES.join(', ')
  if (flags.mode !== undefined && !isPermissionMode(flags.mode))
    throw new UsageError(`--mode must be one of ${valid}, not ${JSON.stringify(flags.mode)}`)
  if (flags.yolo && flags.mode !== undefined && flags.mode !== 'yolo')
    throw new UsageError(`--yolo and --mode ${flags.mode} contradict each other; use one`)
  if (flags.yolo) return { mode: 'yolo', source: 'flag' }
  if (flags.mode !== undefined) return { mode: flags.mode as PermissionMode, source: 'flag' }
  const fromEnv = env.KEEL_MODE
  if (fromEnv !== undefined && fromEnv !== '') {
    if (!isPermissionMode(fromEnv))
      throw new UsageError(`KEEL_MODE must be one of ${valid}, not ${JSON.stringify(fromEnv)}`)
    return { mode: fromEnv, source: 'env' }
  }
  if (configured) return { mode: configured, source: 'settings' }
  return { mode: doorDefault(command), source: 'default' }
}
