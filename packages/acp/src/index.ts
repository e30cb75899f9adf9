import type { Context } from 'cordis'
import type { DoorContext } from '@keel/door'
import { type Config, useConfig } from './config.ts'

export { Config, acpConfig, planEnabled } from './config.ts'

export const name = 'keel-acp'

/**
 * Optional composition entry: `{ name: '@keel/acp', config: { plan: true } }` turns on plan updates for `keel acp`.
 * The bridge itself is not a plugin; the CLI starts it as a front door.
 */
export function apply(ctx: Context, config: Config): void {
  useConfig(ctx, config)
}

/** `keel acp`: ACP v1 over stdio. The SDK loads only here, not when a composition merely lists this plugin. */
export async function runAcp(door: DoorContext): Promise<number> {
  const { runStdio } = await import('./stdio.ts')
  return runStdio(door)
}
