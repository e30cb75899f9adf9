import { lastPlan, planHeader, planLines, standingPlan } from '@keel/todo'
import type { Command } from './command.ts'

export const plan: Command = {
  name: 'plan',
  description: 'Show the last plan written in this session, even after a later turn cleared it',
  run: (actions) => {
    const events = actions.agent.session.events
    const todos = lastPlan(events)
    if (!todos) return actions.note('info', 'No plan has been written in this session yet.')
    const where = standingPlan(events) !== null ? 'standing' : 'cleared when a later turn started'
    actions.note(
      'info',
      [`Last ${planHeader(todos)} (${where})`, ...planLines(todos).map((line) => `  ${line}`)].join('\n'),
    )
  },
}
