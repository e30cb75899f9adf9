import type { Context } from 'cordis'
import Schema from 'schemastery'
import { Invariants } from './invariants.ts'

export const name = 'keel-invariants'
export type Config = {}
export const Config: Schema<Config> = Schema.object({})

/** Dev-mode invariants (on in tests, demos and with KEEL_DEV=1): every event is checked before it commits. */
export function apply(ctx: Context): void {
  ctx.plugin(Invariants)
}
