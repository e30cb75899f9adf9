// The `!command` message: the person ran a command themselves, and the log holds it as a user message (source
// `shell`) the model reads next turn. Written here and read back by the transcript fold; browser-safe (imports
// nothing), so the web page reads it the same way.

const HEADER = 'The user ran a shell command in the terminal (typed with `!`; not one of your tool calls).'
const OPEN_COMMAND = '<command>\n'
const CLOSE_COMMAND = '\n</command>\n<output>\n'
const CLOSE_OUTPUT = '\n</output>'

/** The user message the model reads: the command and its output (with the bash tool's exit-status line). */
export function shellMessage(command: string, output: string): string {
  return `${HEADER}\n${OPEN_COMMAND}${command}${CLOSE_COMMAND}${output}${CLOSE_OUTPUT}`
}

/** The command and output back out of `shellMessage`; the whole text as output (and no command) otherwise. */
export function parseShellMessage(text: string): { command: string; output: string } {
  const start = text.indexOf(OPEN_COMMAND)
  const middle = text.indexOf(CLOSE_COMMAND, start)
  if (!text.startsWith(HEADER) || start < 0 || middle < 0 || !text.endsWith(CLOSE_OUTPUT))
    return { command: '', output: text }
  return {
    command: text.slice(start + OPEN_COMMAND.length, middle),
    output: text.slice(middle + CLOSE_COMMAND.length, text.length - CLOSE_OUTPUT.length),
  }
}

/**
 * What the person typed, as a `!command`: the command after the `!` (empty for a bare `!`), or undefined when the
 * text is a prompt. Every door reads a prompt box's text through this.
 */
export function userCommandOf(text: string): string | undefined {
  const trimmed = text.trim()
  return trimmed.startsWith('!') ? trimmed.slice(1).trim() : undefined
}
