import { resolve } from 'node:path'
import { parseArgs } from 'node:util'
import { closest } from '@keel/session/text'

/** One of the current ids (@keel/llm CURRENT_MODELS); deepseek-chat was retired on 2026-07-24. */
export const DEFAULT_MODEL = 'deepseek/deepseek-v4-flash'

/** Every flag, with its one-line help. The table is the parser's spec and `--help`'s text. */
export const FLAGS = {
  print: { type: 'boolean', short: 'p', help: 'Print mode: run one prompt to the end of its turn and exit' },
  'output-format': {
    type: 'string',
    help: 'Print mode output: text (default), json, or stream-json (log events as JSON lines)',
  },
  quiet: { type: 'boolean', short: 'q', help: 'Print mode: no interim text, tool lines or plan updates on stderr' },
  'max-turns': { type: 'string', help: 'Print mode: end the turn after this many model requests (exit 5)' },
  timeout: { type: 'string', help: 'Print mode: cancel the run after this long, e.g. 90s, 10m, 1h (exit 124)' },
  'max-budget-usd': {
    type: 'string',
    help: 'Print mode: cancel the run once it has cost this many US dollars (exit 6)',
  },
  'fail-on-denial': { type: 'boolean', help: 'Print mode: exit 3 when any tool call was denied' },
  'output-schema': {
    type: 'string',
    help: 'Print mode: the answer must be JSON valid against this JSON Schema file (exit 4 if not)',
  },
  image: {
    type: 'string',
    multiple: true,
    help: 'Print mode: attach this PNG, JPEG, GIF or WebP to the prompt, repeatable (the model must take images)',
  },
  model: { type: 'string', short: 'm', help: `Model as <provider>/<model> (default ${DEFAULT_MODEL}, or $KEEL_MODEL)` },
  'base-url': {
    type: 'string',
    help: 'Base URL of an OpenAI-compatible server (Ollama, vLLM, llama.cpp) or a provider override',
  },
  effort: {
    type: 'string',
    help: 'Reasoning effort of the model for this run (low, medium, high, max, …; each provider maps its own)',
  },
  cwd: { type: 'string', help: 'Working directory for the agent (default: the current directory)' },
  continue: { type: 'boolean', short: 'c', help: 'Continue the latest session in the working directory' },
  resume: { type: 'string', short: 'r', help: 'Resume the session with this id (or a unique prefix of it)' },
  config: { type: 'string', help: 'Composition file to load instead of the built-in one' },
  mode: {
    type: 'string',
    help: 'Permission mode: read-only, plan, ask, auto or yolo (default: ask; auto for -p; or $KEEL_MODE)',
  },
  yolo: { type: 'boolean', help: 'Same as --mode yolo: every tool runs without asking, commands unsandboxed' },
  allow: {
    type: 'string',
    multiple: true,
    help: "Allow rule for this run, repeatable: --allow 'bash(npm test:*)' --allow 'edit(src/**)'",
  },
  'allow-domain': {
    type: 'string',
    multiple: true,
    help: 'Host sandboxed commands may reach for this run, repeatable: --allow-domain registry.npmjs.org',
  },
  store: {
    type: 'string',
    help: "Session store for this run: postgres://… (default: $KEEL_STORE, the settings' store, else JSONL files)",
  },
  port: { type: 'string', help: 'serve: port to listen on (default 4317)' },
  host: { type: 'string', help: 'serve: address to bind (default 127.0.0.1)' },
  json: { type: 'boolean', help: 'sessions, mcp list, config: print JSON' },
  all: {
    type: 'boolean',
    help: 'sessions list: every working directory and child sessions; serve: serve the sessions of every directory',
  },
  markdown: {
    type: 'boolean',
    help: 'sessions show: print the standing plan as a Markdown checklist; sessions export: write Markdown',
  },
  html: { type: 'boolean', help: 'sessions export: write one self-contained HTML file' },
  output: { type: 'string', short: 'o', help: 'sessions export: the file to write (default: standard output)' },
  to: {
    type: 'string',
    help: 'sessions rewind: the turn to go back to (its start); sessions copy: postgres://… or files',
  },
  at: { type: 'string', help: 'sessions fork: fork before this turn (default: after the last)' },
  files: { type: 'boolean', help: 'sessions rewind: restore the files only' },
  conversation: { type: 'boolean', help: 'sessions rewind: fork the conversation only' },
  force: { type: 'boolean', help: "sessions rewind: overwrite files you changed since the agent's last checkpoint" },
  undo: { type: 'boolean', help: 'sessions rewind: put back the files the last rewind replaced' },
  trust: {
    type: 'boolean',
    help: "-p, serve, acp: trust the folder's project settings and .mcp.json for this run (keel trust records it)",
  },
  fork: { type: 'boolean', help: 'With -r/-c: continue in a new branch (a fork), leaving the original untouched' },
  version: { type: 'boolean', short: 'v', help: 'Print the version' },
  help: { type: 'boolean', short: 'h', help: 'Print this help' },
} as const

const SUBCOMMANDS = {
  serve: 'Start the web UI on 127.0.0.1 (prints a URL with an access token)',
  acp: 'Speak the Agent Client Protocol over stdio (for editors and automation)',
  'sessions list': 'List sessions of the working directory (--all for every directory), newest first',
  'sessions show <id>': 'Show a session (id or unique prefix): its transcript summary and standing plan',
  'sessions rewind <id>':
    'Rewind files and conversation to the start of a turn (--to N, --files, --conversation, --undo)',
  'sessions fork <id>': 'Branch a session into a new one (--at N: before turn N)',
  'sessions search <text>': 'Sessions whose prompts, answers or plan items contain the text (--all: every directory)',
  'plan [show]': "The current session's standing plan and pending proposal (-r <id>: another session)",
  'plan add|rename|move|remove|done|start|pending …':
    'Edit the plan as the person, also while keel runs it (keel plan help for the words)',
  'plan approve|reject …': 'Answer the pending plan proposal: approve [--mode ask|auto], or reject <sentence>',
  'sessions copy <id>|--all': 'Copy sessions from the store in use to --to postgres://… or --to files (idempotent)',
  'sessions export <id>': 'The whole transcript as --markdown or --html (-o file), subagents and plans included',
  'mcp list': "Start the configured MCP servers and list each one's status and tools (--json)",
  'trust [dir]': 'Trust a folder (default: this one): its settings, .mcp.json and command files apply in full',
  config: 'Print the merged settings and where each value came from (--json too)',
} as const

/** Flags that only print mode reads: given to another command they would be silently ignored, so they are refused. */
const PRINT_ONLY = [
  'quiet',
  'max-turns',
  'timeout',
  'max-budget-usd',
  'fail-on-denial',
  'output-schema',
  'image',
] as const

export type Flags = {
  [K in keyof typeof FLAGS]?: (typeof FLAGS)[K] extends { multiple: true }
    ? string[]
    : (typeof FLAGS)[K]['type'] extends 'boolean'
      ? boolean
      : string
}

export type Command =
  | { kind: 'help' }
  | { kind: 'version' }
  | { kind: 'interactive'; prompt?: string }
  | { kind: 'print'; prompt?: string }
  | { kind: 'serve' }
  | { kind: 'acp' }
  | { kind: 'sessions-list' }
  | { kind: 'sessions-show'; id: string }
  | { kind: 'mcp-list' }
  | { kind: 'sessions-rewind'; id: string }
  | { kind: 'sessions-fork'; id: string }
  | { kind: 'sessions-search'; text: string }
  | { kind: 'sessions-copy'; id?: string }
  | { kind: 'sessions-export'; id: string; format: 'markdown' | 'html' }
  | { kind: 'config' }
  | { kind: 'trust'; dir?: string }
  | { kind: 'plan'; words: string[] }

export class UsageError extends Error {
  constructor(message: string) {
    super(message)
    this.name = 'UsageError'
  }
}

export function parse(argv: string[]): { command: Command; flags: Flags } {
  let parsed
  try {
    parsed = parseArgs({ args: argv, options: FLAGS as never, allowPositionals: true, strict: true })
  } catch (error) {
    const message = (error as Error).message
    const unknown = /Unknown option '(-{1,2}[^']+)'/.exec(message)?.[1]
    if (unknown) {
      const guess = closest(unknown.replace(/^-+/, ''), Object.keys(FLAGS))
      throw new UsageError(`unknown option ${unknown}${guess ? ` (did you mean --${guess}?)` : ''}; see keel --help`)
    }
    throw new UsageError(message.split('\n')[0]!.replace(/\. To specify.*$/, ''))
  }
  const flags = parsed.values as Flags
  const words = parsed.positionals
  if (flags.help) return { command: { kind: 'help' }, flags }
  if (flags.version) return { command: { kind: 'version' }, flags }
  const format = flags['output-format']
  if (format !== undefined && !['text', 'json', 'stream-json'].includes(format)) {
    throw new UsageError(`--output-format must be text, json or stream-json, not ${JSON.stringify(format)}`)
  }
  if (flags.continue && flags.resume) throw new UsageError('use either --continue or --resume, not both')
  if (flags.fork && !flags.continue && !flags.resume)
    throw new UsageError('--fork goes with -c/--continue or -r/--resume')
  const printOnly = PRINT_ONLY.find((name) => flags[name] !== undefined)
  if (printOnly && !flags.print) throw new UsageError(`--${printOnly} goes with -p (print mode)`)
  if (flags.print) return { command: { kind: 'print', prompt: words.join(' ') || undefined }, flags }
  const [first, second, third] = words
  if (first === 'serve' && words.length === 1) return { command: { kind: 'serve' }, flags }
  if (first === 'acp' && words.length === 1) return { command: { kind: 'acp' }, flags }
  if (first === 'config' && words.length === 1) return { command: { kind: 'config' }, flags }
  if (first === 'trust' && words.length <= 2) return { command: { kind: 'trust', dir: second }, flags }
  if (first === 'sessions') {
    if (second === 'list' && words.length === 2) return { command: { kind: 'sessions-list' }, flags }
    if (second === 'show' && third && words.length === 3)
      return { command: { kind: 'sessions-show', id: third }, flags }
    if (second === 'rewind' && third && words.length === 3)
      return { command: { kind: 'sessions-rewind', id: third }, flags }
    if (second === 'fork' && third && words.length === 3)
      return { command: { kind: 'sessions-fork', id: third }, flags }
    if (second === 'copy' && (third ? words.length === 3 && !flags.all : words.length === 2 && flags.all))
      return { command: { kind: 'sessions-copy', ...(third ? { id: third } : {}) }, flags }
    if (second === 'search' && words.length >= 3 && words.slice(2).join(' ').trim())
      return { command: { kind: 'sessions-search', text: words.slice(2).join(' ') }, flags }
    if (second === 'export' && third && words.length === 3) {
      if (flags.markdown === flags.html) throw new UsageError('sessions export takes one of --markdown or --html')
      return { command: { kind: 'sessions-export', id: third, format: flags.html ? 'html' : 'markdown' }, flags }
    }
    throw new UsageError(
      'usage: keel sessions list [--json] [--all] | show <id> [--json] [--markdown] | rewind <id> --to <turn> | fork <id> [--at <turn>] | search <text> [--all] [--json] | copy <id>|--all --to postgres://…|files | export <id> --markdown|--html [-o file]',
    )
  }
  if (first === 'plan') return { command: { kind: 'plan', words: words.slice(1) }, flags }
  if (first === 'mcp') {
    if (second === 'list' && words.length === 2) return { command: { kind: 'mcp-list' }, flags }
    throw new UsageError('usage: keel mcp list [--json]')
  }
  return { command: { kind: 'interactive', prompt: words.join(' ') || undefined }, flags }
}

export function helpText(version: string): string {
  const lines = [
    `keel ${version} — a coding agent with a live task plan`,
    '',
    'Usage:',
    '  keel [prompt]                 Interactive terminal UI',
    '  keel -p "prompt" [flags]      Print mode',
  ]
  for (const [name, help] of Object.entries(SUBCOMMANDS)) lines.push(`  keel ${name.padEnd(24)} ${help}`)
  lines.push('', 'Flags:')
  for (const [name, spec] of Object.entries(FLAGS)) {
    const short = 'short' in spec ? `-${spec.short}, ` : '    '
    const value = spec.type === 'string' ? ' <value>' : ''
    lines.push(`  ${short}--${(name + value).padEnd(22)} ${spec.help}`)
  }
  lines.push(
    '',
    'Environment: DEEPSEEK_API_KEY, OPENAI_API_KEY, ANTHROPIC_API_KEY, OPENROUTER_API_KEY, KEEL_API_KEY,',
    '  KEEL_MODEL (default model), KEEL_MODE (permission mode), KEEL_HOME (default ~/.keel), KEEL_DEV=1 (dev-mode invariants)',
    '',
    'Settings: $KEEL_HOME/settings.json and .keel/settings.json from the project root down (see keel config);',
    '  instructions: $KEEL_HOME/AGENTS.md, then AGENTS.md (or CLAUDE.md) from the project root down',
  )
  return lines.join('\n')
}

export function workingDirectory(flags: Flags): string {
  return resolve(flags.cwd ?? process.cwd())
}

export function modelSpec(flags: Flags): string {
  return flags.model ?? process.env.KEEL_MODEL ?? DEFAULT_MODEL
}
