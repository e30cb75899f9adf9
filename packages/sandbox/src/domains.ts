// The sandbox runtime's own check of an `allowedDomains` entry, for settings to run before anything boots: an entry
// the runtime refuses (a bare `*`, `http://x`) failed every later command instead of the start.
import {
  ALLOWED_DOMAIN_ENTRY_MESSAGE,
  isValidAllowedDomainEntry,
} from '@anthropic-ai/sandbox-runtime/dist/sandbox/domain-pattern.js'

/** Why `entry` is not a host pattern the sandbox accepts (`example.com`, `*.npmjs.org`, `host:443`), or undefined. */
export function domainProblem(entry: string): string | undefined {
  return isValidAllowedDomainEntry(entry) ? undefined : ALLOWED_DOMAIN_ENTRY_MESSAGE
}
