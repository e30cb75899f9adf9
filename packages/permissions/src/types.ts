import type { SandboxLevel } from '@keel/tools'

export type { SandboxLevel, ToolAccess } from '@keel/tools'

/** How much the agent may do without asking; see the README's mode table. */
export type PermissionMode = 'read-only' | 'ask' | 'auto' | 'yolo'
export const PERMISSION_MODES: readonly PermissionMode[] = ['read-only', 'ask', 'auto', 'yolo']

export function isPermissionMode(value: unknown): value is PermissionMode {
  return typeof value === 'string' && (PERMISSION_MODES as readonly string[]).includes(value)
}

/** One question for the person at the front door. */
export interface PermissionAsk {
  sessionId: string
  callId: string
  tool: string
  /** One line: "bash: rm -rf build", "edit src/a.ts". */
  summary: string
  /** Shown in full above the prompt: the command, or the content of a write. */
  detail?: string
  /** The narrowest rule "always" would add: bash(npm test:*), edit(src/a.ts), mcp__s__t. */
  suggestedRule: string
  /** Why the policy asks: "the command may change things", "/etc/x is outside the working directory …". */
  reason?: string
  /** Set when a subagent asks: its parent session and the `task` call that started it. */
  parent?: { sessionId: string; callId: string }
}

export interface PermissionAnswer {
  decision: 'allow' | 'deny'
  scope: 'once' | 'always'
}

/** How a front door asks. It should settle with a denial (or reject) when `signal` aborts. */
export type Asker = (ask: PermissionAsk, signal: AbortSignal) => Promise<PermissionAnswer>

/** Who decided a call, as logged in `permission/decision`. */
export type DecisionScope = 'once' | 'always' | 'rule' | 'mode'

/** The policy's answer for one call, before anyone is asked. */
export type Verdict =
  | { outcome: 'allow'; scope: 'rule' | 'mode'; rule?: string; sandbox: SandboxLevel; log: boolean }
  | { outcome: 'deny'; scope: 'rule' | 'mode'; rule?: string; reason: string }
  /** `hint` says what would let the call run when no one can be asked. */
  | { outcome: 'ask'; reason: string; sandbox: SandboxLevel; hint?: string }

/** The seam the agent loop asks through, declared in @keel/tools below both (`PermissionService` implements it). */
export type { Authorization, CallToAuthorize, PermissionGate } from '@keel/tools'

/** Rules as written in settings: `bash(git status)`, `bash(npm test:*)`, `edit(src/**)`, `mcp__s__*`, `read`. */
export interface PermissionRules {
  allow: string[]
  deny: string[]
}

declare module '@keel/session' {
  interface SessionEventMap {
    /** Between a call's `tool/call` and its `tool/result`: the person was asked about the call. */
    'permission/request': { callId: string; tool: string; summary: string }
    /**
     * Between a call's `tool/call` and its `tool/result`: whether it may run, and who decided (the person once or
     * always, a rule, or the mode). A denial's `tool/result` is an error naming the same. `rule` names the rule
     * that decided, or the one "always" saved, `file` the settings file it was saved to, and `mode` the mode
     * when the mode decided. `interrupted`: written by crash repair for a request no one answered (a denial).
     */
    'permission/decision': {
      callId: string
      decision: 'allow' | 'deny'
      scope: DecisionScope
      rule?: string
      file?: string
      mode?: PermissionMode
      interrupted?: boolean
    }
  }
}
