import type { Context } from 'cordis'
import Schema from 'schemastery'
import { PermissionService, type PermissionsConfig } from './service.ts'
import { PERMISSION_MODES, type PermissionAsk, type PermissionMode } from './types.ts'

export * from './types.ts'
export { PermissionService, declined, declinedReason, hostRefusal, type PermissionsConfig } from './service.ts'
export { decide, type PolicyInput } from './policy.ts'
export { parseRule, parseRules, type Rule } from './rules.ts'
export {
  analyzeCommand,
  type CommandAnalysis,
  loadShellParser,
  needsShellParser,
  type SimpleCommand,
} from './command.ts'
export { isReadOnly, READ_ONLY_COMMANDS } from './readonly.ts'
export { summarize } from './describe.ts'
export { suggestRules, type Suggestion } from './suggest.ts'
export { appendAllowedDomain, appendRules, projectSettingsPath, ruleFiles } from './settings.ts'
export { projectRoot } from '@keel/settings'
export { describeDecision, describeModeChange } from './render.ts'

declare module 'cordis' {
  interface Context {
    permissions: PermissionService
  }
  interface Events {
    /**
     * A person is being asked about a tool call (the registered asker is called too). For UIs that only observe.
     * @mode emit
     */
    'permission/ask'(ask: PermissionAsk): void
    /**
     * The person changed the permission mode mid-session (`ctx.permissions.setMode`); front doors show the new one.
     * @mode emit
     */
    'permission/mode'(mode: PermissionMode, previous: PermissionMode): void
  }
}

export const name = 'keel-permissions'
export const inject = ['tools']

export interface Config extends PermissionsConfig {}

export const Config: Schema<Config> = Schema.object({
  mode: Schema.union(PERMISSION_MODES.map((m) => Schema.const(m))).description(
    "read-only, ask, auto or yolo. Unset: --mode / --yolo, then $KEEL_MODE, then the front door's default (ask; auto for keel -p).",
  ) as Schema<PermissionMode | undefined>,
  allow: Schema.array(Schema.string())
    .default([])
    .description('Rules that let calls run without asking: bash(npm test:*), edit(src/**), mcp__server__*.'),
  deny: Schema.array(Schema.string()).default([]).description('Rules that decline calls; deny beats allow.'),
  sandbox: Schema.object({
    allowedDomains: Schema.array(Schema.string())
      .default([])
      .description('Hosts sandboxed commands may reach (none by default).'),
  }).default({ allowedDomains: [] }),
})

/** `ctx.permissions`: modes, rules, the ask channel, and the `permission/*` log events. */
export function apply(ctx: Context, config: Config): void {
  ctx.plugin(PermissionService, config)
}
