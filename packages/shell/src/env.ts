// What a command's environment holds. Commands run what the model wrote, and their output goes back to the model and
// onto the log: the person's keys stay out unless a setting names them, and tools are asked for plain output.
import Schema from 'schemastery'

export interface EnvConfig {
  /** Variables kept although they look like credentials (`NPM_TOKEN` for a build that publishes). */
  passthrough: string[]
  /** Variables set for every command; they replace the defaults below (`{ "TERM": "xterm-256color" }`). */
  set: Record<string, string>
}

export const EnvConfig: Schema<EnvConfig> = Schema.object({
  passthrough: Schema.array(Schema.string())
    .default([])
    .description('Variables kept in commands although they look like credentials (exact names).'),
  set: Schema.dict(Schema.string())
    .default({})
    .description('Variables set for every command, replacing the defaults (NO_COLOR=1, PAGER=cat, TERM=dumb, …).'),
})

/** Plain output: no colour codes, no pager waiting for a key, no terminal that does not exist. */
export const PLAIN_OUTPUT: Readonly<Record<string, string>> = {
  NO_COLOR: '1',
  FORCE_COLOR: '0',
  PAGER: 'cat',
  GIT_PAGER: 'cat',
  TERM: 'dumb',
}

/** Keys of the providers Keel talks to, named even where the patterns below would not catch them. */
const PROVIDER_KEYS = new Set([
  'DEEPSEEK_API_KEY',
  'OPENAI_API_KEY',
  'ANTHROPIC_API_KEY',
  'ANTHROPIC_AUTH_TOKEN',
  'OPENROUTER_API_KEY',
  'KEEL_API_KEY',
  'KEEL_STORE',
  'AWS_SECRET_ACCESS_KEY',
  'AWS_SESSION_TOKEN',
])

/** What a credential is called: `*_API_KEY`, `*_TOKEN`, `*_SECRET`, anything with SECRET or PASSWORD in it. */
const CREDENTIAL = /(^|_)(API_?KEY|TOKEN|SECRET)$|SECRET|PASSWORD|PASSWD/i

/** A URL that carries a password (`postgres://user:secret@db/keel`, `https://user:token@proxy`), whatever it is called. */
const PASSWORD_URL = /^[a-z][a-z0-9+.-]*:\/\/[^/?#@\s:]*:[^/?#@\s]+@/i

/**
 * Whether the policy drops `name` unless it is passed through: a credential by its name, or a URL holding a password
 * by its value (`DATABASE_URL`, and Keel's own session store, which an agent could otherwise use to answer its own
 * approvals).
 */
export function isCredential(name: string, value = ''): boolean {
  return PROVIDER_KEYS.has(name.toUpperCase()) || CREDENTIAL.test(name) || PASSWORD_URL.test(value.trim())
}

/**
 * The environment of one command: the host's, without credentials (unless passed through), with plain-output
 * defaults (a passed-through name keeps the host's value; `set` wins over both), then `extra` (TMPDIR and the like).
 */
export function commandEnv(
  config: EnvConfig,
  extra: Record<string, string> = {},
  host: NodeJS.ProcessEnv = process.env,
): Record<string, string> {
  const keep = new Set(config.passthrough)
  const env: Record<string, string> = {}
  for (const [name, value] of Object.entries(host)) {
    if (value === undefined) continue
    if (isCredential(name, value) && !keep.has(name)) continue
    env[name] = value
  }
  for (const [name, value] of Object.entries(PLAIN_OUTPUT)) if (!keep.has(name)) env[name] = value
  return { ...env, ...config.set, ...extra }
}
