// Where the page keeps its access token. keel serve prints `http://127.0.0.1:<port>/#token=<t>`: a fragment is never
// sent to any server, so no request carries the token but the page's own, and no other origin gets it. A cookie
// would not do: cookies are shared by every port of 127.0.0.1, so any local dev server the browser visits would
// receive it. The page moves it to sessionStorage (this origin, port included, and this tab only), takes it out of
// the address bar, and sends it as `X-Keel-Token` on each request.

const KEY = 'keel-token'

/** Moves `#token=…` of the address into sessionStorage, keeping the rest of the fragment (`s=<session>`). */
function takeTokenFromAddress(): void {
  const params = new URLSearchParams(window.location.hash.slice(1))
  const token = params.get('token')
  if (token === null) return
  sessionStorage.setItem(KEY, token)
  params.delete('token')
  const rest = params.toString()
  history.replaceState(null, '', `${window.location.pathname}${window.location.search}${rest ? `#${rest}` : ''}`)
}

/**
 * Takes the token now and whenever the fragment changes (a printed URL pasted into a tab already on this page is a
 * same-document navigation): registered before the app's own `hashchange` listener, so the app sees `#s=` only.
 */
export function watchAddressForToken(): void {
  takeTokenFromAddress()
  window.addEventListener('hashchange', takeTokenFromAddress)
}

/** The token this tab holds, if any. */
export function accessToken(): string | null {
  return sessionStorage.getItem(KEY)
}
