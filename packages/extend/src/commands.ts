import { join, relative } from 'node:path'
import { keelHome } from '@keel/session/paths'
import { projectRoot } from '@keel/settings'
import { isFolder, markdownFiles, readBounded } from './files.ts'
import { parseFrontmatter } from './frontmatter.ts'

// Slash commands from Markdown files, in claude-code's format: the file's path below its folder is the name
// (`frontend/review.md` is `/frontend:review`), the frontmatter describes it, the body is the prompt.

type CommandScope = 'project' | 'user'

export interface SlashCommand {
  /** `review`, `frontend:review`. */
  name: string
  description: string
  argumentHint?: string
  allowedTools?: string
  model?: string
  body: string
  path: string
  /** The folder it was found in; `@path` and links are held inside the project (project) or this folder (user). */
  folder: string
  scope: CommandScope
}

export interface CommandSet {
  commands: SlashCommand[]
  /** One line per file skipped, naming the file and why. */
  warnings: string[]
  /** The folders looked in, in order (the first of a name wins). */
  folders: { path: string; scope: CommandScope; found: number }[]
}

/** Where commands are looked for, first wins: the project's `.keel/commands`, `.claude/commands`, then the user's. */
export function commandFolders(cwd: string): { path: string; scope: CommandScope }[] {
  const root = projectRoot(cwd)
  return [
    { path: join(root, '.keel', 'commands'), scope: 'project' },
    { path: join(root, '.claude', 'commands'), scope: 'project' },
    { path: join(keelHome(), 'commands'), scope: 'user' },
  ]
}

export function loadCommands(cwd: string): CommandSet {
  const set: CommandSet = { commands: [], warnings: [], folders: [] }
  const byName = new Map<string, SlashCommand>()
  for (const folder of commandFolders(cwd)) {
    let found = 0
    if (isFolder(folder.path))
      for (const rel of markdownFiles(folder.path)) {
        const path = join(folder.path, rel)
        const name = rel.slice(0, -3).split('/').join(':')
        if (!/^[\w.-]+(:[\w.-]+)*$/.test(name)) {
          set.warnings.push(`${path}: skipped, "${name}" is not a command name (letters, digits, - _ .)`)
          continue
        }
        const earlier = byName.get(name)
        if (earlier) {
          set.warnings.push(`${path}: skipped, /${name} is already defined by ${earlier.path}`)
          continue
        }
        try {
          const { fields, body } = parseFrontmatter(readBounded(path, folder.path))
          const command: SlashCommand = {
            name,
            description: fields.description ?? firstLine(body),
            body,
            path,
            folder: folder.path,
            scope: folder.scope,
            ...(fields['argument-hint'] ? { argumentHint: fields['argument-hint'] } : {}),
            ...(fields['allowed-tools'] ? { allowedTools: fields['allowed-tools'] } : {}),
            ...(fields.model ? { model: fields.model } : {}),
          }
          byName.set(name, command)
          set.commands.push(command)
          found++
        } catch (error) {
          set.warnings.push(`${path}: skipped, ${(error as Error).message}`)
        }
      }
    set.folders.push({ ...folder, found })
  }
  return set
}

function firstLine(body: string): string {
  return body.trim().split('\n')[0]?.slice(0, 80) ?? ''
}

/** `/name args…` split, or undefined when the text is not a slash command invocation. */
export function parseInvocation(text: string): { name: string; args: string } | undefined {
  const match = /^\/([\w.-]+(?::[\w.-]+)*)(?:\s+([\s\S]*))?$/.exec(text.trim())
  return match ? { name: match[1]!, args: (match[2] ?? '').trim() } : undefined
}

/** What a `` !`cmd` `` gives back: its output, or why it did not run. */
export type ShellOutcome = { ran: true; output: string } | { ran: false; reason: string }

export interface ExpandOptions {
  cwd: string
  /** Whether the project's own files may run code (the trust gate's answer); the user's commands always may. */
  trusted: boolean
  /** Runs one command through the permission check and the sandbox (the caller's; Keel's bash tool). */
  shell: (command: string) => Promise<ShellOutcome>
}

export interface Expansion {
  text: string
  /** The `` !`cmd` `` lines and what became of each. */
  shell: { command: string; ran: boolean; reason?: string }[]
  /** `@path` references that were not included, and why. */
  skipped: { path: string; reason: string }[]
}

/**
 * The prompt a command stands for: `$ARGUMENTS` and `$1…$9` replaced, each `` !`cmd` `` run (only when trusted, or
 * the command is the user's own) and replaced by its output, each `@path` followed by that file's contents.
 */
export async function expandCommand(command: SlashCommand, args: string, options: ExpandOptions): Promise<Expansion> {
  const result: Expansion = { text: '', shell: [], skipped: [] }
  const words = splitArgs(args)
  let text = command.body
    .replace(/\$ARGUMENTS/g, () => args)
    .replace(/\$([1-9])/g, (_, n) => words[Number(n) - 1] ?? '')
  const mayRun = command.scope === 'user' || options.trusted
  const pieces: string[] = []
  let last = 0
  for (const match of text.matchAll(/!`([^`\n]+)`/g)) {
    pieces.push(text.slice(last, match.index))
    last = match.index + match[0].length
    const cmd = match[1]!
    if (!mayRun) {
      const reason = 'the folder is not trusted (keel trust)'
      result.shell.push({ command: cmd, ran: false, reason })
      pieces.push(`[\`${cmd}\` was not run: ${reason}]`)
      continue
    }
    const outcome = await options.shell(cmd)
    result.shell.push({ command: cmd, ran: outcome.ran, ...(outcome.ran ? {} : { reason: outcome.reason }) })
    pieces.push(outcome.ran ? outcome.output.trimEnd() : `[\`${cmd}\` was not run: ${outcome.reason}]`)
  }
  pieces.push(text.slice(last))
  text = pieces.join('')
  // A file's own text is not scanned again: an included file's `@x` stays text.
  const root = command.scope === 'project' ? projectRoot(options.cwd) : options.cwd
  const files: string[] = []
  for (const match of text.matchAll(/(^|\s)@([^\s`]+)/g)) {
    const ref = match[2]!.replace(/[.,;:)]+$/, '')
    const path = join(options.cwd, ref)
    try {
      const content = readBounded(path, root)
      files.push(`Contents of ${relative(options.cwd, path) || ref}:\n\`\`\`\n${content.trimEnd()}\n\`\`\``)
    } catch (error) {
      result.skipped.push({ path: ref, reason: (error as Error).message })
    }
  }
  result.text = files.length ? `${text.trimEnd()}\n\n${files.join('\n\n')}` : text.trimEnd()
  return result
}

function splitArgs(args: string): string[] {
  return [...args.matchAll(/"([^"]*)"|'([^']*)'|(\S+)/g)].map((m) => m[1] ?? m[2] ?? m[3]!)
}
