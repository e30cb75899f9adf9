import type { Context } from 'cordis'
import { isPermissionMode, PERMISSION_MODES, type PermissionMode, type PermissionService } from '@keel/permissions'
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

const YOLO_WARNING = 'keel: yolo mode: every tool runs without asking and commands run outside the sandbox'

/**
 * Applies the run's policy to `ctx.permissions`: the mode and the `--allow` rules. Returns the lines to print on
 * stderr at start (the yolo warning, rules from settings that did not parse).
 */
export function applyPolicy(
  ctx: Context,
  flags: Flags,
  command: Command['kind'],
  env: NodeJS.ProcessEnv = process.env,
): string[] {
  const permissions: PermissionService | undefined = ctx.get('permissions')
  if (!permissions) {
    if (flags.mode !== undefined || flags.yolo || flags.allow?.length)
      throw new UsageError(
        '--mode, --yolo and --allow need the @keel/permissions plugin, which this composition does not load',
      )
    return []
  }
  const { mode } = resolveMode(flags, env, permissions.config.mode, command)
  const bad = permissions.configure({ mode, allow: flags.allow ?? [] })
  const fromFlags = (flags.allow ?? []).filter((text) => bad.some((problem) => problem.includes(JSON.stringify(text))))
  if (fromFlags.length) throw new UsageError(`--allow: ${bad[0]}`)
  const lines = permissions.problems.map((problem) => `keel: ignoring a permission rule: ${problem}`)
  if (mode === 'yolo') lines.push(YOLO_WARNING)
  return lines
}
