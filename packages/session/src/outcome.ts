// Whether a tool call succeeded, decided once for every front end (the TUI, the web page, ACP, `keel sessions show`):
// a door styles this answer, it never decides itself. Browser-safe (types only), exported through `@keel/session/text`.
import type { ToolResultDetails } from './types.ts'

/** `ok`, `failed` (an error result, or a command that exited non-zero, timed out or was killed), or `cancelled`. */
export type ResultStatus = 'ok' | 'failed' | 'cancelled'

export function resultStatus(result: { isError: boolean; details?: ToolResultDetails }): ResultStatus {
  const details = result.details
  if (details?.kind === 'cancelled') return 'cancelled'
  if (result.isError) return 'failed'
  if (details?.kind === 'command' && !(details.exit.kind === 'exited' && details.exit.code === 0)) return 'failed'
  return 'ok'
}

/** The short words for a failed command's end: `exit 3`, `timed out after 120 s`, `killed by SIGKILL`. */
export function failureLabel(details: ToolResultDetails | undefined): string | undefined {
  if (details?.kind !== 'command') return undefined
  const exit = details.exit
  switch (exit.kind) {
    case 'exited':
      return exit.code === 0 ? undefined : `exit ${exit.code}`
    case 'killed':
      return `killed by ${exit.signal}`
    case 'timeout':
      return `timed out after ${exit.seconds} s`
  }
}

// CSI (ESC [ or the 8-bit 0x9b, parameters, intermediates, a final byte), OSC (ESC ] or 0x9d, up to BEL or ESC \),
// the other string sequences (DCS, SOS, PM, APC, up to ST), and the two-byte escapes (ESC ( B, ESC =, ESC 7 …).
const TERMINAL_CODES =
  /(?:\u001b\[|\u009b)[\u0030-\u003f]*[\u0020-\u002f]*[\u0040-\u007e]|(?:\u001b\]|\u009d)[^\u0007\u001b\u009c]*(?:\u0007|\u001b\\|\u009c)?|(?:\u001b[PX^_]|[\u0090\u0098\u009e\u009f])[^\u001b\u009c]*(?:\u001b\\|\u009c)?|\u001b[\u0020-\u002f]*[\u0030-\u007e]/g

/**
 * Text with the terminal's colour, cursor and title sequences taken out: what the model is sent and the log keeps of
 * tool output (`vitest` under a colour terminal prints `ESC[32m✓ESC[39m`). Other control characters stay, for the
 * doors' escaping to show.
 */
export function stripTerminalCodes(text: string): string {
  return text.includes('\u001b') || /[\u0090-\u009f]/.test(text) ? text.replace(TERMINAL_CODES, '') : text
}
