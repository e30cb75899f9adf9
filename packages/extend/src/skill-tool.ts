import { defineTool, Type } from '@keel/tools'
import { loadSkills, skillBody } from './skills.ts'

const SkillParameters = Type.Object(
  { name: Type.String({ description: 'The skill name, as the system prompt lists it.' }) },
  { additionalProperties: false },
)

/**
 * `skill`: loads a skill's instructions when the model decides one applies. The description is fixed text (the list
 * of skills is in the system prompt), so the request's tools stay byte-stable whatever is installed.
 */
export function skillTool() {
  return defineTool({
    name: 'skill',
    description:
      "Load a skill's instructions by name, before working on a task its description (in the system prompt) matches. Returns the instructions and the skill's folder; read its other files relative to that folder.",
    parameters: SkillParameters,
    access: () => ({ kind: 'read' }),
    concurrencySafe: true,
    presentCall: (args) => ({ title: `Skill ${args.name}`, kind: 'read', rawInput: args }),
    execute(args, exec) {
      const set = loadSkills(exec.agent?.cwd ?? process.cwd())
      const skill = set.skills.find((entry) => entry.name === args.name.trim())
      if (!skill) {
        const names = set.skills.map((entry) => entry.name)
        throw new Error(
          `no skill named ${JSON.stringify(args.name)}; ${names.length ? `skills: ${names.join(', ')}` : 'no skills are installed'}`,
        )
      }
      return skillBody(skill)
    },
  })
}
