import { join } from 'node:path'
import { keelHome } from '@keel/session/paths'
import { projectRoot } from '@keel/settings'
import { isFolder, readBounded, subfolders } from './files.ts'
import { parseFrontmatter } from './frontmatter.ts'

// Skills in the SKILL.md format (claude-code's Agent Skills, https://docs.claude.com/en/docs/claude-code/skills): a
// folder holding SKILL.md, whose frontmatter has `name` and `description`, plus any files beside it. The model sees
// only the names and descriptions; the `skill` tool loads a body when the model decides it applies.

type SkillScope = 'project' | 'user'

export interface Skill {
  name: string
  description: string
  /** The skill's folder: its other files are read relative to it. */
  folder: string
  path: string
  scope: SkillScope
  /** `allowed-tools` as written (claude-code's comma list); read, listed, not a grant. */
  allowedTools?: string
}

export interface SkillSet {
  skills: Skill[]
  warnings: string[]
  folders: { path: string; scope: SkillScope; found: number }[]
}

/** Where skills are looked for, first of a name wins. */
export function skillFolders(cwd: string): { path: string; scope: SkillScope }[] {
  const root = projectRoot(cwd)
  return [
    { path: join(root, '.keel', 'skills'), scope: 'project' },
    { path: join(root, '.agents', 'skills'), scope: 'project' },
    { path: join(root, '.claude', 'skills'), scope: 'project' },
    { path: join(keelHome(), 'skills'), scope: 'user' },
  ]
}

/** claude-code's rule for a skill's name: lowercase letters, digits and hyphens, at most 64. */
const NAME = /^[a-z0-9][a-z0-9-]{0,63}$/

/** The longest description kept (claude-code's limit): the system prompt pays for every byte on every request. */
const DESCRIPTION_LIMIT = 1024

export function loadSkills(cwd: string): SkillSet {
  const set: SkillSet = { skills: [], warnings: [], folders: [] }
  const byName = new Map<string, Skill>()
  for (const folder of skillFolders(cwd)) {
    let found = 0
    if (isFolder(folder.path))
      for (const dir of subfolders(folder.path)) {
        const skillFolder = join(folder.path, dir)
        const path = join(skillFolder, 'SKILL.md')
        let text: string
        try {
          text = readBounded(path, folder.path)
        } catch (error) {
          if ((error as Error).message !== 'a broken link')
            set.warnings.push(`${path}: skipped, ${(error as Error).message}`)
          continue
        }
        try {
          const { fields } = parseFrontmatter(text)
          const name = fields.name ?? ''
          if (!NAME.test(name))
            throw new Error(`line 1: name ${JSON.stringify(name)} is not a skill name (a-z, 0-9, -, at most 64)`)
          const description = (fields.description ?? '').replace(/\s+/g, ' ').trim()
          if (!description) throw new Error('line 1: the frontmatter has no description')
          const earlier = byName.get(name)
          if (earlier) throw new Error(`skill ${name} is already defined by ${earlier.path}`)
          const skill: Skill = {
            name,
            description: description.slice(0, DESCRIPTION_LIMIT),
            folder: skillFolder,
            path,
            scope: folder.scope,
            ...(fields['allowed-tools'] ? { allowedTools: fields['allowed-tools'] } : {}),
          }
          byName.set(name, skill)
          set.skills.push(skill)
          found++
        } catch (error) {
          set.warnings.push(`${path}: skipped, ${(error as Error).message}`)
        }
      }
    set.folders.push({ ...folder, found })
  }
  return set
}

/** What the system prompt says of the skills: names and descriptions only, in a fixed order (byte-stable). */
export function skillsSection(skills: readonly Skill[]): string {
  if (!skills.length) return ''
  return [
    'Skills: each is a folder of instructions for one kind of task. When a task matches a description below, call the `skill` tool with its name first and follow what it returns.',
    ...skills.map((skill) => `- ${skill.name}: ${skill.description}`),
  ].join('\n')
}

/** The body a `skill` call returns: the instructions, where the skill's files are, and which files it holds. */
export function skillBody(skill: Skill): string {
  const { body } = parseFrontmatter(readBounded(skill.path, skill.folder))
  return `Skill ${skill.name} (its folder: ${skill.folder}; read its other files relative to that folder)\n\n${body.trim()}`
}
