import { decodeKittyPrintable } from '@mariozechner/pi-tui'

// A prompt is answered on purpose, never by the tail of a sentence: a key counts as an answer only after a pause in
// typing. Keys typed within SETTLE_MS of the prompt opening, or of the last printable key, belong to what the person
// was typing (the app hands letters to the editor; Enter and digits are held back until the pause).

export const SETTLE_MS = 600

/** True for a key that types text (a letter, a digit, a pasted run), not a control or navigation key. */
export function isPrintable(data: string): boolean {
  const text = decodeKittyPrintable(data) ?? data
  if (!text.length || text.startsWith('\x1b')) return false
  for (const char of text) if (char < ' ' || char === '\x7f') return false
  return true
}

export class TypingGuard {
  private quietSince: number

  constructor(private readonly now: () => number = Date.now) {
    this.quietSince = now()
  }

  /** The prompt opened, or the person typed text: the pause starts again. */
  typed(): void {
    this.quietSince = this.now()
  }

  /** Whether the person has paused long enough for a key to be an answer. */
  settled(): boolean {
    return this.now() - this.quietSince >= SETTLE_MS
  }
}
