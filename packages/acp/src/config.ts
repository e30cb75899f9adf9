import type { Context } from 'cordis'
import Schema from 'schemastery'

export interface Config {
  /** Project the standing plan (the `todos` projection) as ACP `plan` updates. */
  plan: boolean
}

export const Config: Schema<Config> = Schema.object({
  plan: Schema.boolean()
    .default(false)
    .description(
      'Send the standing todo plan as ACP plan updates (off: the bridge is automation-only and sends no plan).',
    ),
})

// The composition's @keel/acp entry, per running app (root context). Deliberately not a ctx service: the bridge only
// needs to read one flag, and the setting lives exactly as long as the plugin entry (an effect of it).
const settings = new WeakMap<object, Config>()

export function useConfig(ctx: Context, config: Config): void {
  ctx.effect(() => {
    const root = ctx.root
    settings.set(root, config)
    return () => {
      if (settings.get(root) === config) settings.delete(root)
    }
  })
}

/** The loaded @keel/acp entry's config, if the composition has one. */
export function acpConfig(ctx: Context): Config | undefined {
  return settings.get(ctx.root)
}

/**
 * Whether plan updates are on: `KEEL_ACP_PLAN` (1/true/yes/on or 0/false/no/off) wins when set, else the @keel/acp
 * entry's `plan`, else off.
 */
export function planEnabled(ctx: Context, env: Record<string, string | undefined> = process.env): boolean {
  const flag = env.KEEL_ACP_PLAN?.trim().toLowerCase()
  if (flag) {
    if (['1', 'true', 'yes', 'on'].includes(flag)) return true
    if (['0', 'false', 'no', 'off'].includes(flag)) return false
  }
  return acpConfig(ctx)?.plan === true
}
