import type { Terminal } from '@mariozechner/pi-tui'
import {
  type CallBackMoment,
  callBackHow,
  callBackWords,
  type NotifySettings,
  terminalCallBack,
} from '@keel/door/call-back'
import { escapeLine } from './safe.ts'

/** Focus reporting (DEC mode 1004): the terminal sends ESC [ I and ESC [ O as it gains and loses focus. */
const FOCUS_ON = '\u001b[?1004h'
const FOCUS_OFF = '\u001b[?1004l'
const FOCUS_IN = '\u001b[I'
const FOCUS_OUT = '\u001b[O'

/**
 * The TUI's call back (the rule is @keel/door/call-back's): it tracks the terminal's focus and, at a moment the rule
 * says to call, rings the bell and for `notify: desktop` writes the OSC 9 / OSC 777 notification.
 */
export class TerminalCallBack {
  /** Undefined until the terminal reports focus (one that never does counts as looked at). */
  private focused: boolean | undefined

  constructor(
    private readonly terminal: Terminal,
    private readonly settings: NotifySettings,
    private readonly emit: (moment: CallBackMoment) => void,
  ) {}

  start(): void {
    if ((this.settings.notify ?? 'bell') !== 'off') this.terminal.write(FOCUS_ON)
  }

  stop(): void {
    if ((this.settings.notify ?? 'bell') !== 'off') this.terminal.write(FOCUS_OFF)
  }

  /** Takes the focus reports out of the input; true when `data` was one. */
  onInput(data: string): boolean {
    if (data === FOCUS_IN) this.focused = true
    else if (data === FOCUS_OUT) this.focused = false
    else return false
    return true
  }

  call(moment: CallBackMoment): void {
    this.emit(moment)
    const how = callBackHow(this.settings, this.focused)
    if (!how) return
    const words = callBackWords(moment)
    this.terminal.write(terminalCallBack(how, { title: escapeLine(words.title), body: escapeLine(words.body) }))
  }
}
