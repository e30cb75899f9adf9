import { defineTool, Type } from '@keel/tools'
import { describeTodoWrite, resultText } from './describe.ts'
import { standingPlanOf } from './plan.ts'
import { TODO_STATUSES, type TodoItem } from './types.ts'
import { checkTodos, droppedUnfinished, type Policy } from './validate.ts'

export const TodoParameters = Type.Object(
  {
    todos: Type.Array(
      Type.Object(
        {
          content: Type.String({ description: 'What the task is, in a few words.' }),
          status: Type.Enum([...TODO_STATUSES]),
        },
        { additionalProperties: false },
      ),
      { description: 'The complete list, in order.' },
    ),
  },
  { additionalProperties: false },
)

/** The accepted shape, shown once under a rejected call: other agents' lists (activeForm, id, priority, plan/step,
 * description, cancelled) become this one in one retry. */
const TODO_ARGUMENTS_HELP =
  'Expected exactly {"todos":[{"content":"…","status":"pending|in_progress|completed"}]}: the whole list on every call, each task with only these two keys. Drop a cancelled task; keep a blocked one pending.'

export function todoWriteTool(policy: Policy) {
  return defineTool({
    name: 'todo_write',
    description: describeTodoWrite(policy),
    parameters: TodoParameters,
    argumentsHelp: TODO_ARGUMENTS_HELP,
    // Only the agent's own plan changes: it runs in every permission mode.
    access: () => ({ kind: 'read' }),
    presentCall: (args) => ({ title: 'Update plan', kind: 'other', rawInput: args }),
    execute(args, exec) {
      const agent = exec.agent
      if (!agent)
        throw new Error("todo_write must be called by an agent: the list belongs to the calling agent's session")
      const checked = checkTodos(args.todos as TodoItem[], policy)
      if ('error' in checked) throw new Error(checked.error)
      const previous = standingPlanOf(agent.session)
      agent.session.append('todo/write', { todos: checked.todos })
      return resultText(checked.todos, droppedUnfinished(previous, checked.todos))
    },
  })
}
