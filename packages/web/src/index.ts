// `keel serve`: the web front door. The host (hono) lives here; the React client is under src/client and is built
// with Vite on demand (see build.ts).
export { runServe, startServe } from './serve.ts'
export { WebHost, DEFAULT_MAX_OPEN_SESSIONS, DEFAULT_IDLE_CLOSE_MS, type WebHostOptions } from './host.ts'
export { RpcFailure } from './rpc/failure.ts'
export { AllowedHosts, checkHost, checkOrigin, tokenCookieName } from './access.ts'
export { readBodyLimited } from './body.ts'
export { EventHub } from './events.ts'
export {
  PageCutter,
  pageOfEvents,
  pageOfFile,
  standingPlanOfFile,
  PageRequestError,
  MAX_PAGE_EVENTS,
  type Page,
  type FilePage,
} from './history.ts'
export { resolveBind, isLoopback, originOf, DEFAULT_HOST, DEFAULT_PORT, type BindAddress } from './bind.ts'
export { newToken, tokenMatches, requestToken } from './token.ts'
export { ensureClientBuilt, clientIsFresh, clientDistDir, clientSourceDir, webPackageDir } from './build.ts'
export * from './protocol.ts'
