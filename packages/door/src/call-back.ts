// When and how a door calls the person back (the `@keel/door/call-back` entry, browser-safe: it imports only
// types). The moments are the same for every door: a turn of the person's own session ended, or a tool call waits
// for their approval. Whether to call is one rule (`callBackHow`): never with `notify: off`; otherwise only while
// the person is looking elsewhere (the terminal or the tab is not focused), or always with `notifyWhen: always`.
// A door styles the call: the TUI rings the bell and writes OSC 9 / OSC 777; the web page (which gets the settings in
// the host's hello frame) has no bell, so `bell` is its title badge alone and `desktop` adds the Notification API;
// ACP reports it in its own session updates. Each moment is also a cordis event
// (`door/call-back`), which a `Notification` hook can take.
import type { TurnEndReason } from '@keel/session'

/** How a door calls back: the terminal bell, a desktop notification (which rings the bell too), or not at all. */
export type NotifyHow = 'bell' | 'desktop' | 'off'
/** When: only while the person is not looking (the default), or after every moment. */
export type NotifyWhen = 'unfocused' | 'always'

export interface NotifySettings {
  notify?: NotifyHow
  notifyWhen?: NotifyWhen
}

export const NOTIFY_HOWS: readonly NotifyHow[] = ['bell', 'desktop', 'off']
export const NOTIFY_WHENS: readonly NotifyWhen[] = ['unfocused', 'always']

export type CallBackMoment =
  | { kind: 'turn-end'; sessionId: string; reason: TurnEndReason; message?: string }
  | { kind: 'approval'; sessionId: string; summary: string }

declare module 'cordis' {
  interface Events {
    /**
     * A door reached a moment to call the person back (whether or not the settings let it make a sound).
     * @mode emit
     */
    'door/call-back'(moment: CallBackMoment): void
  }
}

/** Whether to call back now and how; undefined: stay quiet. `focused` undefined: the door cannot tell (as focused). */
export function callBackHow(settings: NotifySettings, focused: boolean | undefined): 'bell' | 'desktop' | undefined {
  const how = settings.notify ?? 'bell'
  if (how === 'off') return undefined
  if ((settings.notifyWhen ?? 'unfocused') === 'unfocused' && focused !== false) return undefined
  return how
}

/** The one wording of a call back: a title and a line (raw; a door escapes it on its way out). */
export function callBackWords(moment: CallBackMoment): { title: string; body: string } {
  if (moment.kind === 'approval') return { title: 'Keel needs your approval', body: moment.summary }
  switch (moment.reason) {
    case 'completed':
    case 'max-tokens':
      return { title: 'Keel is done', body: 'The turn ended, over to you.' }
    case 'aborted':
      return { title: 'Keel stopped', body: 'The turn was cancelled.' }
    default:
      return { title: 'Keel stopped', body: `The turn ended early${moment.message ? `: ${moment.message}` : '.'}` }
  }
}

/**
 * The bytes a terminal door writes: BEL, and for a desktop call OSC 9 (iTerm2, WezTerm, kitty, Ghostty, Windows
 * Terminal) and OSC 777 (foot, rxvt, VTE terminals, WezTerm). `title` and `body` must already be escaped; ESC, BEL
 * and `;` are taken out of them here as well, since either would end or split the sequence.
 */
export function terminalCallBack(how: 'bell' | 'desktop', words: { title: string; body: string }): string {
  if (how === 'bell') return '\u0007'
  const clean = (text: string) => text.replace(/[\u0000-\u001f\u007f-\u009f;]/g, ' ').slice(0, 200)
  const title = clean(words.title)
  const body = clean(words.body)
  return `\u001b]9;${title}: ${body}\u0007\u001b]777;notify;${title};${body}\u0007\u0007`
}
