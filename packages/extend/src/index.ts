export {
  commandFolders,
  expandCommand,
  loadCommands,
  parseInvocation,
  type CommandSet,
  type Expansion,
  type ExpandOptions,
  type ShellOutcome,
  type SlashCommand,
} from './commands.ts'
export { parseFrontmatter, type Frontmatter } from './frontmatter.ts'
export { FILE_LIMIT } from './files.ts'
