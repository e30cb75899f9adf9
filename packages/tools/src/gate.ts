// The seam between the loop and a permission policy: @keel/agent asks it about each tool call, @keel/permissions
// implements it (`ctx.permissions`). Declared here, below both, so neither imports the other and the contract is
// checked where it is implemented, not cast where it is used.
import type { Session } from '@keel/session'
import type { HostVerdict, SandboxLevel } from './define.ts'

/** One tool call the loop is about to run. */
export interface CallToAuthorize {
  session: Session
  cwd: string
  callId: string
  tool: string
  /** The raw arguments as the model sent them. */
  arguments: unknown
  signal: AbortSignal
  /** What a `PreToolUse` hook said: deny is a denial, ask asks, allow lifts an ask but never a deny rule. */
  hook?: { decision: 'allow' | 'deny' | 'ask'; reason: string }
}

/** Run it (in this sandbox), or do not, with the message the model reads. */
export type Authorization = { allowed: true; sandbox: SandboxLevel } | { allowed: false; message: string }

/** A host a running, sandboxed call tried to reach that its allow list does not name. */
export interface HostToAuthorize {
  session: Session
  cwd: string
  callId: string
  tool: string
  host: string
  port: number | undefined
  signal: AbortSignal
}

/** What the loop needs of a permission policy. */
export interface PermissionGate {
  authorize(call: CallToAuthorize): Promise<Authorization>
  /** Whether a sandboxed call may reach a host no allow list names; without it, such a host is refused. */
  authorizeHost?(call: HostToAuthorize): Promise<HostVerdict>
}
