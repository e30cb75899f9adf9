// `/init`: the built-in command every door with commands offers. It is an ordinary prompt: the model studies the
// repository and writes AGENTS.md with `write` (or improves it with `edit`), through the same tools, permission
// checks and sandbox as any turn. The one rule here: an AGENTS.md that exists is never changed without the person
// saying so first: the TUI and the web page ask before the turn starts, print mode (no one to ask) refuses.
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { projectRoot } from '@keel/settings'

export const INIT_COMMAND = {
  name: 'init',
  description: 'Study the repository and write AGENTS.md (or improve the one there, after asking)',
} as const

export interface InitRun {
  /** The file the model is asked to write: AGENTS.md at the project root. */
  file: string
  /** It exists already: a door asks the person before it sends `prompt`. */
  exists: boolean
  prompt: string
}

/** Whether `text` is `/init` (nothing after it: the command takes no arguments). */
export function isInit(text: string): boolean {
  return text.trim() === '/init'
}

export function initRun(cwd: string): InitRun {
  const root = projectRoot(cwd)
  const file = join(root, 'AGENTS.md')
  const exists = existsSync(file)
  const claude = !exists && existsSync(join(root, 'CLAUDE.md'))
  const task = exists
    ? `Improve the AGENTS.md at ${file}: read it first, keep what is still true, correct what the repository contradicts, add what is missing, and change it with the edit tool.`
    : `Write a new AGENTS.md at ${file} with the write tool.${claude ? ' A CLAUDE.md is there: take from it what is still true.' : ''}`
  const prompt = [
    'Study this repository and document it for coding agents and new contributors in AGENTS.md.',
    task,
    'Look before you write: the README, the build and package files, the CI configuration, the folder layout and a few source and test files. Run the commands you document (build, test, lint) if they are cheap, so what you write is verified.',
    'Keep it short and specific to this repository (no generic advice), in Markdown with these parts where they apply: what the project is; the layout (where things live); how to build, test, lint and run it, as exact commands; the code style and conventions the code actually follows; how to write and run tests; anything surprising (generated files, required services, environment variables).',
    'When you are done, say in two or three lines what you wrote.',
  ].join('\n\n')
  return { file, exists, prompt }
}

/** What a door asks before `/init` changes an AGENTS.md that exists. */
export function initQuestion(run: InitRun): string {
  return `${run.file} exists: let the model improve it?`
}

/** Print mode's line for an AGENTS.md that exists: it has no one to ask. */
export function initRefusal(run: InitRun): string {
  return `/init: ${run.file} exists and print mode cannot ask before changing it; run /init in keel or keel serve, or move the file away first`
}
