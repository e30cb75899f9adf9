import type { Context } from 'cordis'
import Schema from 'schemastery'
import { CheckpointService, type CheckpointConfig } from './service.ts'

export { CheckpointService, RewindError, type CheckpointConfig, type RewindPlan } from './service.ts'
export { Shadow, type Change } from './shadow.ts'
export {
  NoSuchTurnError,
  performRewind,
  previewRewind,
  REWIND_SCOPES,
  RewindConflictError,
  repositoriesLine,
  turnAt,
  turnPrompts,
  turnStartOf,
  type ForkMaker,
  type RewindOutcome,
  type RewindPreview,
  type RewindRequest,
  type RewindScope,
  type TurnPrompt,
} from './rewind.ts'

export const name = 'keel-checkpoint'
export const inject = ['sessions']

export interface Config extends CheckpointConfig {}

export const Config: Schema<Config> = Schema.object({
  enabled: Schema.boolean()
    .default(true)
    .description('Snapshot the working directory at each turn start and after changes, so files can be rewound.'),
  maxFiles: Schema.natural()
    .min(1)
    .default(50_000)
    .description('A directory with more files than this (after .gitignore) gets no checkpoints.'),
  maxBytes: Schema.natural()
    .min(1)
    .default(500_000_000)
    .description('A directory larger than this many bytes (after .gitignore) gets no checkpoints.'),
  listSeconds: Schema.natural()
    .min(1)
    .default(10)
    .description('A directory git cannot list in this many seconds (after .gitignore) gets no checkpoints.'),
})

/** `ctx.checkpoints`, and a snapshot before each model request that follows a turn start or a change. */
export function apply(ctx: Context, config: Config): void {
  ctx.plugin(CheckpointService, config)
}
