import { homedir } from 'node:os'
import { join, resolve } from 'node:path'

/** `$KEEL_HOME`, else `~/.keel`. Read at call time so tests can point it at a temp dir. */
export function keelHome(): string {
  return process.env.KEEL_HOME ? resolve(process.env.KEEL_HOME) : join(homedir(), '.keel')
}

export function sessionsRoot(home = keelHome()): string {
  return join(home, 'sessions')
}

/** A readable, filesystem-safe folder name for a working directory. */
export function cwdSlug(cwd: string): string {
  const slug = resolve(cwd)
    .replace(/[^A-Za-z0-9._]+/g, '-')
    .replace(/^-+|-+$/g, '')
  return slug.slice(-120) || 'root'
}

export function sessionPath(cwd: string, id: string, home?: string): string {
  return join(sessionsRoot(home), cwdSlug(cwd), `${id}.jsonl`)
}

/**
 * `$KEEL_HOME/private`: what no sandboxed command may see. The sandbox hides the whole folder, so a file made in it
 * after a command started stays hidden from that command too (a file hidden by name is hidden only if it exists).
 */
export function privateDir(home = keelHome()): string {
  return join(home, 'private')
}

/**
 * `$KEEL_HOME/private/approval.key`: the person's secret that signs approvals answered through a shared session
 * store (@keel/store-pg); the same file on every machine whose doors answer.
 */
export function approvalKeyPath(home = keelHome()): string {
  return join(privateDir(home), 'approval.key')
}
