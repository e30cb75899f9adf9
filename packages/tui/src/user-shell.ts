// How a `!command` (run by @keel/door/user-command) shows in the TUI: while it runs, and in the transcript.
import { truncateToWidth, type Component } from '@mariozechner/pi-tui'
import { escapeControls, escapeLine, guardLine } from './safe.ts'
import { style } from './style.ts'

const SHOWN_LINES = 4
const EXPANDED_LINES = 200

function lastLines(output: string, limit: number): { more: number; lines: string[] } {
  const all = escapeControls(output)
    .split('\n')
    .filter((line) => line.trim())
  const lines = all.slice(-limit)
  return { more: all.length - lines.length, lines }
}

/** A run in the transcript: `! command` and the last lines of its output (all of them with Ctrl+O). */
export function renderShellEntry(command: string, output: string, width: number, expanded: boolean): string[] {
  const fit = (line: string) => truncateToWidth(guardLine(line), Math.max(1, width), '…')
  const lines = ['', fit(`${style.magenta('!')} ${style.bold(escapeLine(command))}`)]
  const { more, lines: shown } = lastLines(output, expanded ? EXPANDED_LINES : SHOWN_LINES)
  if (more)
    lines.push(
      fit(style.dim(`  │ … ${more} earlier line${more === 1 ? '' : 's'}${expanded ? '' : '  ctrl+o to expand'}`)),
    )
  for (const line of shown) lines.push(fit(style.dim('  │ ') + line))
  return lines
}

/** The command running now, above the editor, with its live output. Empty when nothing runs. */
export class ShellRunView implements Component {
  running: { command: string; output: string } | undefined

  invalidate(): void {}

  render(width: number): string[] {
    if (!this.running) return []
    return renderShellEntry(this.running.command, this.running.output, width, false)
  }
}
