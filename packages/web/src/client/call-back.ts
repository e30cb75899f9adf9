// The page's call back (the rule and the words are @keel/door/call-back's, the settings `notify` and `notifyWhen`
// come from the host's hello frame): while the tab is not focused (or always, with `notifyWhen: always`), a turn's end
// or a waiting approval puts a count in the tab's title, cleared when the tab is looked at again. A page has no bell,
// so `bell` (the default) is that badge alone; `desktop` adds a notification (the Notification API, once the person
// allowed it); `off` does neither.
import { type CallBackMoment, callBackHow, callBackWords, type NotifySettings } from '@keel/door/call-back'

let settings: NotifySettings = {}
let missed = 0
let baseTitle: string | undefined

function badge(): void {
  baseTitle ??= document.title.replace(/^\(\d+\) /, '')
  document.title = missed ? `(${missed}) ${baseTitle}` : baseTitle
}

/**
 * Clears the badge when the person comes back, or (one that came while they looked, `notifyWhen: always`) at their
 * next click or key; call once.
 */
export function watchFocus(): () => void {
  const back = () => {
    if (!missed || !document.hasFocus()) return
    missed = 0
    badge()
  }
  window.addEventListener('focus', back)
  document.addEventListener('visibilitychange', back)
  window.addEventListener('pointerdown', back)
  window.addEventListener('keydown', back)
  return () => {
    window.removeEventListener('focus', back)
    document.removeEventListener('visibilitychange', back)
    window.removeEventListener('pointerdown', back)
    window.removeEventListener('keydown', back)
  }
}

/** The settings the host loaded (its hello frame), followed from the next moment on. */
export function followNotifySettings(loaded: NotifySettings): void {
  settings = loaded
}

/**
 * Asks the browser for notifications, from a click or a key (browsers only ask in answer to the person); only when
 * the settings would show one.
 */
export function askNotificationPermission(): void {
  if (callBackHow(settings, false) !== 'desktop') return
  if (typeof Notification !== 'undefined' && Notification.permission === 'default')
    void Notification.requestPermission().catch(() => {})
}

export function callBack(moment: CallBackMoment): void {
  const how = callBackHow(settings, document.hasFocus() && document.visibilityState === 'visible')
  if (!how) return
  missed++
  badge()
  if (how !== 'desktop' || typeof Notification === 'undefined' || Notification.permission !== 'granted') return
  const words = callBackWords(moment)
  // Text only: a notification shows no markup, so the log's words need no more escaping than the title has.
  new Notification(words.title, { body: words.body, tag: `keel-${moment.sessionId}` })
}
