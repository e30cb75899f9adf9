import { readdirSync, readFileSync } from 'node:fs'
import type { Terminal } from '@mariozechner/pi-tui'
import type { Session } from '@keel/session'

/** Whether any process's command line contains `marker` (Linux /proc; no pgrep needed). */
export function processRunning(marker: string): boolean {
  for (const pid of readdirSync('/proc')) {
    if (!/^\d+$/.test(pid) || Number(pid) === process.pid) continue
    try {
      if (readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(marker)) return true
    } catch {}
  }
  return false
}

/** ANSI SGR codes removed: what a person reads. */
export function plain(line: string): string {
  return line.replace(/\x1b\[[0-9;:]*m/g, '')
}

export function plainLines(lines: readonly string[]): string[] {
  return lines.map((line) => plain(line).replace(/\s+$/, ''))
}

/** A terminal that records writes and lets a test type keys; pi-tui's TUI runs on it unchanged. */
export class RecordingTerminal implements Terminal {
  output = ''
  private onInput: ((data: string) => void) | undefined

  constructor(
    readonly columns = 100,
    readonly rows = 40,
  ) {}

  get kittyProtocolActive(): boolean {
    return false
  }

  start(onInput: (data: string) => void): void {
    this.onInput = onInput
  }

  /** Sends raw input as the terminal would (one key or sequence per call). */
  type(data: string): void {
    this.onInput?.(data)
  }

  stop(): void {
    this.onInput = undefined
  }

  async drainInput(): Promise<void> {}
  write(data: string): void {
    this.output += data
  }
  moveBy(): void {}
  hideCursor(): void {}
  showCursor(): void {}
  clearLine(): void {}
  clearFromCursor(): void {}
  clearScreen(): void {}
  setTitle(): void {}
  setProgress(): void {}
}

/** Appends `turns` finished turns, each a prompt and an answer naming its number. */
export function fillSession(session: Session, turns: number, answer = (turn: number) => `Answer ${turn}.`): void {
  for (let turn = 1; turn <= turns; turn++) {
    session.append('turn/start', { turn, trigger: 'prompt' })
    session.append(
      'user/message',
      { message: { role: 'user', content: [{ type: 'text', text: `Question ${turn}` }] } },
      { surfaceOp: { op: 'append' } },
    )
    session.append('step/start', { turn, step: 1 })
    session.append(
      'assistant/message',
      { turn, step: 1, message: { role: 'assistant', content: [{ type: 'text', text: answer(turn) }] } },
      { surfaceOp: { op: 'append' } },
    )
    session.append('step/end', { turn, step: 1 })
    session.append('turn/end', { turn, reason: 'completed' })
  }
}
