import type { SandboxLevel } from '@keel/tools'

export type { SandboxLevel, ToolAccess } from '@keel/tools'

/** How much the agent may do without asking; see the README's mode table. */
export type PermissionMode = 'read-only' | 'plan' | 'ask' | 'auto' | 'yolo'
export const PERMISSION_MODES: readonly PermissionMode[] = ['read-only', 'plan', 'ask', 'auto', 'yolo']

export function isPermissionMode(value: unknown): value is PermissionMode {
  return typeof value === 'string' && (PERMISSION_MODES as readonly string[]).includes(value)
}

/**
 * The modes a person steps through mid-session (Shift+Tab in the TUI), in order. `yolo` is left out: it lifts the
 * sandbox, so it is only ever typed (`--mode yolo`).
 */
export const MODE_CYCLE: readonly PermissionMode[] = ['ask', 'auto', 'read-only', 'plan']

/**
 * Modes in which nothing is written: `read-only`, and `plan`, which is read-only until the person approves a plan
 * (@keel/todo's `propose_plan`). The policy treats both alike; only the words differ.
 */
export function writesNothing(mode: PermissionMode): mode is 'read-only' | 'plan' {
  return mode === 'read-only' || mode === 'plan'
}

/** The mode after `mode` in `MODE_CYCLE` (a mode outside the cycle steps to its start). */
export function nextMode(mode: PermissionMode): PermissionMode {
  const i = MODE_CYCLE.indexOf(mode)
  return MODE_CYCLE[(i + 1) % MODE_CYCLE.length]!
}

/** Which project settings file "always" writes to: the personal one (not committed) or the shared one. */
export type RuleFile = 'local' | 'project'

/** One question for the person at the front door. */
export interface PermissionAsk {
  sessionId: string
  callId: string
  tool: string
  /** One line: "bash: rm -rf build", "edit src/a.ts". */
  summary: string
  /** Shown in full above the prompt: the command, or the content of a write. */
  detail?: string
  /**
   * The rules "always" would save, one per part of the call that needed asking (`npm test 2>&1 | tail -3` gives
   * `bash(npm test:*)`: `tail` runs unasked): bash(npm test:*), edit(src/a.ts), mcp__s__t. Empty when no rule can
   * cover the call (a loop, a command the parser cannot judge): then only "once" and "deny" are offered.
   */
  suggestedRules: string[]
  /** The rules "allow for this session" would hold (a file tool's whole tool inside the working directory). */
  sessionRules: string[]
  /** Where "always" saves, by choice: the personal file (the default) and the shared one, as paths to show. */
  files?: Record<RuleFile, string>
  /** Why the policy asks: "the command may change things", "/etc/x is outside the working directory …". */
  reason?: string
  /** Set when a subagent asks: its parent session and the `task` call that started it. */
  parent?: { sessionId: string; callId: string }
  /**
   * Set when a running sandboxed command reached a host no allow list names: the question is about that host, and
   * "always" adds it to `sandbox.allowedDomains` of the chosen file (`suggestedRules` and `sessionRules` hold it).
   */
  host?: string
}

/** How far an answer reaches: this call, the rest of the session (a rule on its log), or saved to a file. */
export type AnswerScope = 'once' | 'session' | 'always'
export const ANSWER_SCOPES: readonly AnswerScope[] = ['once', 'session', 'always']

export interface PermissionAnswer {
  decision: 'allow' | 'deny'
  scope: AnswerScope
  /** For "always": which file the rule goes to; the personal `.keel/settings.local.json` when unset. */
  file?: RuleFile
  /** For a denial: a sentence from the person, which the model reads in the tool result. */
  message?: string
  /**
   * The machine whose door gave the answer, when another process's (through a shared session store, proven by
   * @keel/door/ask-relay); the decision logs it.
   */
  answeredOn?: string
}

/** A well-formed answer (front doors pass on what a client sent). */
export function isPermissionAnswer(value: unknown): value is PermissionAnswer {
  const v = value as PermissionAnswer | undefined
  return (
    !!v &&
    (v.decision === 'allow' || v.decision === 'deny') &&
    ANSWER_SCOPES.includes(v.scope) &&
    (v.file === undefined || v.file === 'local' || v.file === 'project') &&
    (v.message === undefined || typeof v.message === 'string') &&
    (v.answeredOn === undefined || typeof v.answeredOn === 'string')
  )
}

/** How a front door asks. It should settle with a denial (or reject) when `signal` aborts. */
export type Asker = (ask: PermissionAsk, signal: AbortSignal) => Promise<PermissionAnswer>

/** Who decided a call, as logged in `permission/decision`. */
export type DecisionScope = 'once' | 'session' | 'always' | 'rule' | 'mode' | 'hook'

/** The policy's answer for one call, before anyone is asked. */
export type Verdict =
  | { outcome: 'allow'; scope: 'rule' | 'mode'; rule?: string; sandbox: SandboxLevel; log: boolean }
  | { outcome: 'deny'; scope: 'rule' | 'mode'; rule?: string; reason: string }
  /** `hint` says what would let the call run when no one can be asked. */
  /** `protected`: a write to a protected path, which a hook's allow does not lift (only the person does). */
  | { outcome: 'ask'; reason: string; sandbox: SandboxLevel; hint?: string; protected?: true }

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
    'permission/request': { callId: string; tool: string; summary: string; host?: string }
    /**
     * Between a call's `tool/call` and its `tool/result`: whether it may run, and who decided (the person once or
     * for the session or always, a rule, or the mode). A denial's `tool/result` is an error naming the same. `rule`
     * names the rule that decided, or the first one "always" saved or "session" holds, `rules` all of them, `file`
     * the settings file they were saved to, `message` the person's sentence with a denial, and `mode` the mode when
     * the mode decided. `interrupted`: written by crash repair for a request no one answered (a denial). A `session`
     * allow is how the session holds its rules: reopening it folds them back from these events.
     */
    'permission/decision': {
      callId: string
      decision: 'allow' | 'deny'
      scope: DecisionScope
      rule?: string
      rules?: string[]
      file?: string
      message?: string
      mode?: PermissionMode
      interrupted?: boolean
      /**
       * A network decision during the running call: the host its sandboxed command reached (a `session` allow holds
       * the host for the session; `always` added it to `sandbox.allowedDomains` of `file`).
       */
      host?: string
      /** The person answered on another machine (its name in the shared session store), not in this process. */
      answeredOn?: string
    }
    /** The person changed the permission mode mid-session (Shift+Tab, the web header, ACP `session/set_mode`). */
    'permission/mode': { mode: PermissionMode; previous: PermissionMode }
  }
}
