import { skillList } from '@keel/door/slash'
import { escapeLine } from '../safe.ts'
import type { Command } from './command.ts'

/** `/skills`: the skills the model may load (their names and descriptions are in its system prompt). */
export const skills: Command = {
  name: 'skills',
  description: 'List the skills the model can load',
  run: (actions) => {
    const list = skillList(actions.cwd)
    if (!list.length)
      return actions.note('info', 'No skills (.keel/skills, .agents/skills, .claude/skills, $KEEL_HOME/skills).')
    const width = Math.max(...list.map((skill) => skill.name.length)) + 2
    actions.note(
      'info',
      [
        'Skills',
        ...list.map(
          (skill) => `  ${escapeLine(skill.name).padEnd(width)}${escapeLine(skill.description)}  (${skill.scope})`,
        ),
      ].join('\n'),
    )
  },
}
