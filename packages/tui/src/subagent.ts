import type { Context } from 'cordis'
import type { Session } from '@keel/session'
import type { SubagentPlan, SubagentPlans, SubagentService } from '@keel/subagent'

/**
 * The child plan under a `task` card. With @keel/subagent loaded, its service overlays each running child's live
 * plan on the parent's `subagentPlans` projection (`ctx.subagents.plans(parent)`); without the service, the
 * projection alone is read when some plugin registered it. Undefined when neither is there.
 */
export function subagentPlan(ctx: Context, session: Session, callId: string): SubagentPlan | undefined {
  const subagents: SubagentService | undefined = ctx.get('subagents')
  const projections = ctx.get('projections')
  const plans: SubagentPlans | undefined = subagents
    ? subagents.plans(session)
    : projections?.has('subagentPlans')
      ? projections.get(session, 'subagentPlans')
      : undefined
  return plans?.[callId]
}
