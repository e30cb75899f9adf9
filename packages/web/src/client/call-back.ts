// The page's call back (the rule and the words are @keel/door/call-back's): while the tab is not focused, a turn's
// end or a waiting approval shows a desktop notification (the Notification API, once the person allowed it) and a
// badge in the tab's title, cleared when the tab is looked at again.
import { type CallBackMoment, callBackHow, callBackWords } from '@keel/door/call-back'

let missed = 0
let baseTitle: string | undefined

function badge(): void {
  baseTitle ??= document.title.replace(/^\(\d+\) /, '')
  document.title = missed ? `(${missed}) ${baseTitle}` : baseTitle
}

/** Clears the badge when the person comes back; call once. */
export function watchFocus(): () => void {
  const back = () => {
    if (!document.hasFocus()) return
    missed = 0
    badge()
  }
  window.addEventListener('focus', back)
  document.addEventListener('visibilitychange', back)
  return () => {
    window.removeEventListener('focus', back)
    document.removeEventListener('visibilitychange', back)
  }
}

/** Asks the browser for notifications, from a click or a key (browsers only ask in answer to the person). */
export function askNotificationPermission(): void {
  if (typeof Notification !== 'undefined' && Notification.permission === 'default')
    void Notification.requestPermission().catch(() => {})
}

export function callBack(moment: CallBackMoment): void {
  const how = callBackHow({ notify: 'desktop' }, document.hasFocus() && document.visibilityState === 'visible')
  if (!how) return
  missed++
  badge()
  if (typeof Notification === 'undefined' || Notification.permission !== 'granted') return
  const words = callBackWords(moment)
  // Text only: a notification shows no markup, so the log's words need no more escaping than the title has.
  new Notification(words.title, { body: words.body, tag: `keel-${moment.sessionId}` })
}
