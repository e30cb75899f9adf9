import { defineTool, Type } from '@keel/tools'
import { TodoParameters } from './tool.ts'
import type { TodoItem } from './types.ts'
import { checkTodos, type Policy } from './validate.ts'

export const ProposeParameters = Type.Object(
  {
    plan: Type.String({ description: 'The plan as Markdown: what you found, what you will change and how.' }),
    todos: TodoParameters.properties.todos,
  },
  { additionalProperties: false },
)

export const PROPOSED =
  'Plan proposed. The person will approve it (possibly edited), or reject it with a reason. End your turn now with a one-line summary; do not call more tools.'

/**
 * `propose_plan`: in plan mode the model ends its exploration with the plan and its checklist. The proposal is a
 * log event; the person's answer comes later, from any door, and opens the next turn (service.ts). `mode` reads
 * the permission mode in force (undefined without @keel/permissions).
 */
export function proposePlanTool(policy: Policy, mode: () => string | undefined) {
  return defineTool({
    name: 'propose_plan',
    description:
      'In plan mode only: propose your plan to the person, as Markdown plus the checklist of tasks (all pending, or the first in_progress) that will become the standing plan when they approve it. Nothing is changed until they do.',
    parameters: ProposeParameters,
    // It writes nothing but the proposal on the log: it must run in plan mode, which refuses writes.
    access: () => ({ kind: 'read' }),
    presentCall: (args) => ({ title: 'Propose plan', kind: 'think', rawInput: args }),
    execute(args, exec) {
      const agent = exec.agent
      if (!agent) throw new Error('propose_plan must be called by an agent')
      if (agent.depth > 0)
        throw new Error('only the main agent proposes a plan; report what you found in your answer instead')
      const current = mode()
      if (current !== 'plan')
        throw new Error(
          `propose_plan is only for plan mode, and the mode is ${current ?? 'unset'}; carry out the task, keeping a checklist with todo_write`,
        )
      const plan = args.plan.trim()
      if (!plan) throw new Error('plan is empty; describe the plan in Markdown')
      if (!args.todos.length) throw new Error('todos is empty; the plan needs a checklist of at least one task')
      const checked = checkTodos(args.todos as TodoItem[], policy)
      if ('error' in checked) throw new Error(checked.error)
      agent.session.append('plan/proposal', { callId: exec.callId, plan, todos: checked.todos })
      return PROPOSED
    },
  })
}
