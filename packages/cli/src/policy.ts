import type { Context } from 'cordis'
import type { PermissionService } from '@keel/permissions'
import { UsageError, type Command, type Flags } from './args.ts'
import { resolveMode } from './mode.ts'

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
