import { relative } from 'node:path'
import { type Context, Service } from 'cordis'
import { protectedEntries, protectedMatch } from '@keel/settings'
import { notify, type Session, type SessionEventMap } from '@keel/session'
import type { HostToAuthorize, HostVerdict, PermissionGate, ToolAccess } from '@keel/tools'
import { loadShellParser, needsShellParser } from './command.ts'
import { summarize } from './describe.ts'
import { isInside, realPath } from './paths.ts'
import { decide, hostListed } from './policy.ts'
import { parseRules, type Rule } from './rules.ts'
import { projectRules } from './project.ts'
import { appendAllowedDomain, appendRules, ruleFiles } from './settings.ts'
import { suggestRules } from './suggest.ts'
import {
  isPermissionAnswer,
  type Asker,
  type Authorization,
  type CallToAuthorize,
  type PermissionAnswer,
  type PermissionAsk,
  type PermissionMode,
  type Verdict,
} from './types.ts'

export interface PermissionsConfig {
  /** The mode from settings; the CLI's flags, `KEEL_MODE` and the front door's default decide when it is unset. */
  mode?: PermissionMode
  allow: string[]
  deny: string[]
  sandbox: { allowedDomains: string[] }
}

/** The sandbox service as this package uses it (`@keel/sandbox` provides it). */
interface SandboxProbe {
  status(): Promise<{ available: true } | { available: false; reason: string }>
}

interface Waiting {
  ask: PermissionAsk
  settle(answer: PermissionAnswer | Error): void
  controller: AbortController
}

/** What a tool's result says when a call is declined, so the model can change course. */
export function declined(tool: string, reason: string): string {
  return `Error: permission to run ${tool} was declined: ${reason}${DECLINED_TAIL}`
}
const DECLINED_TAIL = '. Do not retry the same call; change course or ask the user.'

/** The reason inside a `declined` message (print mode lists denials with it), or undefined when `text` is not one. */
export function declinedReason(text: string): string | undefined {
  const match = /^Error: permission to run \S+ was declined: /.exec(text)
  if (!match || !text.endsWith(DECLINED_TAIL)) return undefined
  return text.slice(match[0].length, -DECLINED_TAIL.length)
}

/**
 * `ctx.permissions`: the policy (mode and allow/deny rules) and the one channel for asking a person. The agent loop
 * calls `authorize` after `tool/call` is logged and before the tool runs; every ask and decision goes on the log.
 */
export class PermissionService extends Service implements PermissionGate {
  /** The effective mode; the CLI sets it from flags, environment, settings and the front door's default. */
  mode: PermissionMode
  private allowRules: Rule[] = []
  private denyRules: Rule[] = []
  /** Rules from config and flags that did not parse, one line each. */
  readonly problems: string[] = []
  private readonly askers: Asker[] = []
  private readonly waiting = new Map<string, Waiting>()
  private readonly noticed = new Set<string>()
  private sandboxStatus: Promise<{ available: true } | { available: false; reason: string }> | undefined
  /** Rules a session holds ("allow for this session"), by top-level session id; folded from its log when first used. */
  private readonly held = new Map<string, { allow: Rule[]; deny: Rule[]; hosts: string[] }>()
  /** Hosts the person's "always" added to `sandbox.allowedDomains` during this run (the sandbox read its list at start). */
  private readonly savedHosts: string[] = []
  private readonly hostQueue = new Map<string, Promise<void>>()

  constructor(
    ctx: Context,
    readonly config: PermissionsConfig,
  ) {
    super(ctx, 'permissions', true)
    this.mode = config.mode ?? 'ask'
    this.addRules({ allow: config.allow, deny: config.deny })
    ctx.inject(['invariants'], (ctx) => {
      // A mode change is the person's, and comes whenever they make it: between turns too.
      ctx.invariants.allowBetweenTurns('permission/mode')
      ctx.invariants.register('permissions', (event, trace) => {
        if (event.type !== 'permission/request' && event.type !== 'permission/decision') return undefined
        return trace.pendingCalls.has(event.data.callId)
          ? undefined
          : `${event.type} names call ${event.data.callId}, which has no open tool/call in this step`
      })
    })
    // Nothing may wait on a disposed service: pending asks end as denials.
    ctx.on('dispose', () => {
      for (const waiting of this.waiting.values()) waiting.settle(new Error('Keel is shutting down'))
    })
  }

  /** The rules in force, as written. */
  get rules(): { allow: string[]; deny: string[] } {
    return { allow: this.allowRules.map((r) => r.text), deny: this.denyRules.map((r) => r.text) }
  }

  /** Sets the mode and adds rules for this run (`--mode`, `--allow`). Returns the rules that did not parse. */
  configure(options: { mode?: PermissionMode; allow?: readonly string[]; deny?: readonly string[] }): string[] {
    if (options.mode) this.mode = options.mode
    return this.addRules({ allow: options.allow ?? [], deny: options.deny ?? [] })
  }

  private addRules(texts: { allow: readonly string[]; deny: readonly string[] }): string[] {
    const allow = parseRules(texts.allow)
    const deny = parseRules(texts.deny)
    const known = (list: Rule[], rule: Rule) => list.some((r) => r.text === rule.text)
    for (const rule of allow.rules) if (!known(this.allowRules, rule)) this.allowRules.push(rule)
    for (const rule of deny.rules) if (!known(this.denyRules, rule)) this.denyRules.push(rule)
    const problems = [...allow.problems, ...deny.problems]
    this.problems.push(...problems)
    return problems
  }

  /**
   * The person changes the mode mid-session (Shift+Tab, the web header, ACP `session/set_mode`): it applies from the
   * next check on, and each session given gets a `permission/mode` event. Everyone watching hears `permission/mode`.
   */
  setMode(mode: PermissionMode, sessions: readonly Session[] = []): void {
    const previous = this.mode
    if (mode === previous) return
    this.mode = mode
    for (const session of sessions) session.append('permission/mode', { mode, previous })
    this.ctx.emit('permission/mode', mode, previous)
  }

  /** The rules `session` holds for the rest of it (a subagent shares its top-level session's). */
  private heldBy(session: Session): { allow: Rule[]; deny: Rule[]; hosts: string[] } {
    const id = session.header.parent?.sessionId ?? session.id
    let held = this.held.get(id)
    if (!held) {
      const texts = { allow: [] as string[], deny: [] as string[] }
      const hosts: string[] = []
      if (!session.header.parent)
        for (const event of session.events)
          if (event.type === 'permission/decision' && event.data.scope === 'session') {
            if (event.data.host) {
              if (event.data.decision === 'allow') hosts.push(event.data.host)
            } else texts[event.data.decision].push(...(event.data.rules ?? (event.data.rule ? [event.data.rule] : [])))
          }
      held = { allow: parseRules(texts.allow).rules, deny: parseRules(texts.deny).rules, hosts }
      this.held.set(id, held)
    }
    return held
  }

  /** A front door registers how it asks; the latest registered asks. The disposer removes it. */
  setAsker(asker: Asker): () => void {
    return this.ctx.effect(() => {
      this.askers.push(asker)
      return () => {
        const i = this.askers.lastIndexOf(asker)
        if (i >= 0) this.askers.splice(i, 1)
      }
    })
  }

  /** Asks waiting for an answer, oldest first (a reloaded web page shows them again). */
  pending(): PermissionAsk[] {
    return [...this.waiting.values()].map((w) => w.ask)
  }

  /** Answers a pending ask from anywhere; the first answer wins. False when nothing waits under that id. */
  answer(sessionId: string, callId: string, answer: PermissionAnswer): boolean {
    const waiting = this.waiting.get(key(sessionId, callId))
    if (!waiting || !isPermissionAnswer(answer)) return false
    waiting.settle(answer)
    return true
  }

  /** Whether commands can be sandboxed here; probed once. */
  sandbox(): Promise<{ available: true } | { available: false; reason: string }> {
    const probe = this.ctx.get('sandbox') as SandboxProbe | undefined
    if (!probe) return Promise.resolve({ available: false, reason: 'no sandbox plugin is loaded (@keel/sandbox)' })
    this.sandboxStatus ??= probe.status().catch((error: unknown) => ({
      available: false as const,
      reason: error instanceof Error ? error.message : String(error),
    }))
    return this.sandboxStatus
  }

  /** The verdict for a call without asking or logging anything: what `authorize` would start from. */
  async check(
    tool: string,
    access: ToolAccess,
    cwd: string,
    session?: Session,
    /** Allow rules for this check only (a command file's `allowed-tools`); deny rules still win. */
    extraAllow: readonly string[] = [],
  ): Promise<Verdict> {
    const paths = access.paths ?? []
    const real = paths.map((p) => realPath(p))
    const outside = paths.filter((p) => !isInside(p, cwd))
    const guarded = access.kind === 'write' ? protectedOf(paths, real, cwd) : []
    if (access.command !== undefined && needsShellParser(access.command)) await loadShellParser()
    const sandbox =
      access.kind === 'execute' && this.mode !== 'yolo' ? await this.sandbox() : { available: true as const }
    if (!sandbox.available)
      this.notice(
        `the sandbox is off: ${sandbox.reason}; ${this.mode === 'ask' ? 'every command will be asked about' : this.mode === 'auto' ? 'commands are denied (install bubblewrap, or run with --mode yolo)' : 'commands are denied'}`,
      )
    const project = projectRules(cwd)
    const held = session ? this.heldBy(session) : { allow: [], deny: [] }
    return decide({
      mode: this.mode,
      allow: [...this.allowRules, ...project.allow, ...held.allow, ...parseRules([...extraAllow]).rules],
      deny: [...this.denyRules, ...project.deny, ...held.deny],
      tool,
      access,
      cwd,
      outside,
      real,
      protected: guarded,
      allowedHosts: this.config.sandbox?.allowedDomains ?? [],
      sandbox,
    })
  }

  /**
   * Decides one call: logs the decision (and the request, when a person is asked) on the call's session and says
   * whether the tool may run and at which sandbox level. Calls whose arguments do not parse are let through: the
   * tool registry turns them into error results without running anything.
   */
  async authorize(call: CallToAuthorize): Promise<Authorization> {
    const { session, callId, tool, cwd } = call
    const access = this.ctx.tools.access(tool, call.arguments, cwd)
    if (!access) return { allowed: true, sandbox: 'off' }
    let verdict = await this.check(tool, access, cwd, session)
    // A PreToolUse hook's word: a deny rule still wins; its deny is a denial, its ask asks, and its allow lifts an
    // ask (never a protected path's, which only the person lifts).
    const hook = call.hook
    if (hook && verdict.outcome !== 'deny') {
      const message = hook.reason.trim().slice(0, 2000)
      if (hook.decision === 'deny') {
        this.decision(session, { callId, decision: 'deny', scope: 'hook', ...(message ? { message } : {}) })
        return {
          allowed: false,
          message: declined(tool, `a PreToolUse hook denied it${message ? `: ${message}` : ''}`),
        }
      }
      if (hook.decision === 'allow' && verdict.outcome === 'ask' && !verdict.protected) {
        this.decision(session, { callId, decision: 'allow', scope: 'hook', ...(message ? { message } : {}) })
        return { allowed: true, sandbox: verdict.sandbox }
      }
      if (hook.decision === 'ask' && verdict.outcome === 'allow')
        verdict = {
          outcome: 'ask',
          reason: `a PreToolUse hook asks${message ? `: ${message}` : ''}`,
          sandbox: verdict.sandbox,
        }
    }
    if (verdict.outcome === 'allow') {
      if (verdict.log)
        this.decision(session, {
          callId,
          decision: 'allow',
          scope: verdict.scope,
          ...(verdict.rule ? { rule: verdict.rule } : { mode: this.mode }),
        })
      return { allowed: true, sandbox: verdict.sandbox }
    }
    if (verdict.outcome === 'deny') {
      this.decision(session, {
        callId,
        decision: 'deny',
        scope: verdict.scope,
        ...(verdict.rule ? { rule: verdict.rule } : { mode: this.mode }),
      })
      return { allowed: false, message: declined(tool, verdict.reason) }
    }
    const offered = suggestRules(tool, access, cwd, [...this.allowRules, ...this.heldBy(session).allow])
    const ask: PermissionAsk = {
      sessionId: session.id,
      callId,
      tool,
      summary: summarize(tool, access, cwd),
      detail: detailOf(access, this.ctx.tools.parse(tool, call.arguments)),
      suggestedRules: offered.always,
      sessionRules: offered.session,
      files: ruleFiles(cwd),
      reason: verdict.reason,
      ...(session.header.parent ? { parent: session.header.parent } : {}),
    }
    session.append('permission/request', { callId, tool, summary: ask.summary })
    const asker = this.askers[this.askers.length - 1]
    if (!asker) {
      this.decision(session, { callId, decision: 'deny', scope: 'mode', mode: this.mode })
      const allow = ask.suggestedRules.map((rule) => `--allow '${rule}'`).join(' ')
      const hint = verdict.hint ?? `${allow ? `${allow} or ` : ''}--mode auto lets it run`
      return {
        allowed: false,
        message: declined(
          tool,
          `${this.mode} mode asks a person first (${verdict.reason}) and there is no one to ask here; ${hint}`,
        ),
      }
    }
    let answer: PermissionAnswer
    try {
      answer = await this.ask(asker, ask, call.signal)
    } catch (error) {
      if (call.signal.aborted)
        return { allowed: false, message: 'Error: the turn was cancelled while waiting for permission.' }
      this.decision(session, { callId, decision: 'deny', scope: 'once' })
      return {
        allowed: false,
        message: declined(tool, `the question could not be answered (${(error as Error).message})`),
      }
    }
    const message = answer.decision === 'deny' ? answer.message?.trim().slice(0, 2000) || undefined : undefined
    const recorded = this.hold(session, cwd, answer, answer.scope === 'session' ? ask.sessionRules : ask.suggestedRules)
    this.decision(session, {
      callId,
      decision: answer.decision,
      scope: recorded.scope,
      ...(recorded.rules.length ? { rule: recorded.rules[0], rules: recorded.rules } : {}),
      ...(recorded.file ? { file: recorded.file } : {}),
      ...(message ? { message } : {}),
      ...(answer.answeredOn ? { answeredOn: answer.answeredOn } : {}),
    })
    if (answer.decision === 'allow') return { allowed: true, sandbox: verdict.sandbox }
    return {
      allowed: false,
      message: declined(
        tool,
        message ? `the user declined it and said: ${JSON.stringify(message)}` : 'the user declined it',
      ),
    }
  }

  /**
   * A running sandboxed call reached a host no allow list names (the sandbox's proxy holds the connection until this
   * answers). A host the session holds or "always" saved this run passes; `ask` mode asks the person, with the same
   * choices as for a call ("always" adds the host to `sandbox.allowedDomains` of the chosen file); every other mode,
   * or no one to ask, refuses it, naming what would let it through. Each question and refusal is on the log.
   */
  authorizeHost(call: HostToAuthorize): Promise<HostVerdict> {
    // One question at a time per call: asks are keyed by call, and a command may reach two new hosts at once.
    const id = key(call.session.id, call.callId)
    const verdict = (this.hostQueue.get(id) ?? Promise.resolve()).then(() => this.decideHost(call))
    const settled = verdict.then(
      () => {},
      () => {},
    )
    this.hostQueue.set(id, settled)
    void settled.then(() => {
      if (this.hostQueue.get(id) === settled) this.hostQueue.delete(id)
    })
    return verdict
  }

  private async decideHost(call: HostToAuthorize): Promise<HostVerdict> {
    const { session, callId, tool, cwd, host } = call
    const name = host.toLowerCase()
    if (hostListed(name, [...this.heldBy(session).hosts, ...this.savedHosts])) return { allowed: true }
    const where = `${name} is not on sandbox.allowedDomains`
    const asker = this.askers[this.askers.length - 1]
    if (this.mode !== 'ask' || !asker) {
      if (this.mode === 'ask')
        session.append('permission/request', { callId, tool, summary: hostSummary(name, call.port), host: name })
      this.decision(session, { callId, decision: 'deny', scope: 'mode', mode: this.mode, host: name })
      const why =
        this.mode === 'ask'
          ? 'ask mode asks a person first and there is no one to ask here'
          : `denied by ${this.mode} mode`
      return { allowed: false, reason: `${why}: ${hostRefusal(name)}` }
    }
    const ask: PermissionAsk = {
      sessionId: session.id,
      callId,
      tool,
      summary: hostSummary(name, call.port),
      suggestedRules: [name],
      sessionRules: [name],
      files: ruleFiles(cwd),
      reason: `the command is reaching ${where}`,
      host: name,
      ...(session.header.parent ? { parent: session.header.parent } : {}),
    }
    session.append('permission/request', { callId, tool, summary: ask.summary, host: name })
    let answer: PermissionAnswer
    try {
      answer = await this.ask(asker, ask, call.signal)
    } catch (error) {
      if (!call.signal.aborted) this.decision(session, { callId, decision: 'deny', scope: 'once', host: name })
      return { allowed: false, reason: `${where}: the question was not answered (${(error as Error).message})` }
    }
    const message = answer.decision === 'deny' ? answer.message?.trim().slice(0, 2000) || undefined : undefined
    let scope: 'once' | 'session' | 'always' = answer.decision === 'allow' ? answer.scope : 'once'
    let file: string | undefined
    if (scope === 'session') this.heldBy(session).hosts.push(name)
    if (scope === 'always') {
      try {
        file = appendAllowedDomain(cwd, name, answer.file ?? 'local')
        this.savedHosts.push(name)
      } catch (error) {
        this.notice((error as Error).message)
        scope = 'once'
      }
    }
    this.decision(session, {
      callId,
      decision: answer.decision,
      scope,
      host: name,
      ...(file ? { file } : {}),
      ...(message ? { message } : {}),
      ...(answer.answeredOn ? { answeredOn: answer.answeredOn } : {}),
    })
    if (answer.decision === 'allow') return { allowed: true }
    return {
      allowed: false,
      reason: `${where}: the user declined it${message ? ` and said: ${JSON.stringify(message)}` : ''}`,
    }
  }

  /**
   * Applies an answer's reach: "session" holds the rules for the rest of the session, "always" saves them (and holds
   * them for this run). What cannot be saved is said once, and the answer counts for this call only.
   */
  private hold(
    session: Session,
    cwd: string,
    answer: PermissionAnswer,
    rules: readonly string[],
  ): { scope: 'once' | 'session' | 'always'; rules: string[]; file?: string } {
    if (answer.scope === 'once' || !rules.length) return { scope: 'once', rules: [] }
    const parsed = parseRules(rules).rules
    if (answer.scope === 'session') {
      this.heldBy(session)[answer.decision].push(...parsed)
      return { scope: 'session', rules: [...rules] }
    }
    try {
      const file = appendRules(cwd, answer.decision, rules, answer.file ?? 'local')
      this.addRules(answer.decision === 'allow' ? { allow: rules, deny: [] } : { allow: [], deny: rules })
      return { scope: 'always', rules: [...rules], file }
    } catch (error) {
      this.notice((error as Error).message)
      return { scope: 'once', rules: [] }
    }
  }

  private ask(asker: Asker, ask: PermissionAsk, signal: AbortSignal): Promise<PermissionAnswer> {
    const id = key(ask.sessionId, ask.callId)
    const controller = new AbortController()
    return new Promise<PermissionAnswer>((resolve, reject) => {
      const onAbort = () => settle(new Error('cancelled'))
      const settle = (answer: PermissionAnswer | Error) => {
        if (this.waiting.get(id) !== waiting) return
        this.waiting.delete(id)
        signal.removeEventListener('abort', onAbort)
        controller.abort()
        if (answer instanceof Error) reject(answer)
        else resolve(answer)
      }
      const waiting: Waiting = { ask, settle, controller }
      this.waiting.set(id, waiting)
      if (signal.aborted) return onAbort()
      signal.addEventListener('abort', onAbort, { once: true })
      this.ctx.emit('permission/ask', ask)
      Promise.resolve()
        .then(() => asker(ask, controller.signal))
        .then(
          (answer) => settle(isPermissionAnswer(answer) ? answer : new Error('the front door gave no answer')),
          (error: unknown) => settle(error instanceof Error ? error : new Error(String(error))),
        )
    })
  }

  private decision(session: Session, data: SessionEventMap['permission/decision']): void {
    session.append('permission/decision', data)
  }

  /** Says something once per run (why the sandbox is off, a settings file that could not be written). */
  notice(text: string): void {
    if (this.noticed.has(text)) return
    this.noticed.add(text)
    notify(this.ctx, 'permissions', text)
  }
}

/** Why a command could not reach `host`, and what lets it (the tool result, print mode's denials and stderr). */
export function hostRefusal(host: string): string {
  return `${host} is not on sandbox.allowedDomains; --allow-domain ${host} (or sandbox.allowedDomains in settings) lets commands reach it`
}

/** The one line a network question shows: "network: registry.npmjs.org:443". */
function hostSummary(host: string, port: number | undefined): string {
  return `network: ${host}${port ? `:${port}` : ''}`
}

function key(sessionId: string, callId: string): string {
  return `${sessionId}\u0000${callId}`
}

const DETAIL_LIMIT = 20_000

/** Shown in full above the prompt: the command, the content of a write, the two sides of an edit. */
function detailOf(access: ToolAccess, parsed: { args: unknown } | { error: string }): string | undefined {
  if (access.command !== undefined) return access.command.slice(0, DETAIL_LIMIT)
  if (!('args' in parsed) || !parsed.args || typeof parsed.args !== 'object') return undefined
  const args = parsed.args as Record<string, unknown>
  let text: string | undefined
  if (typeof args.old_string === 'string' && typeof args.new_string === 'string') {
    text = [
      ...args.old_string.split('\n').map((l) => `- ${l}`),
      ...args.new_string.split('\n').map((l) => `+ ${l}`),
    ].join('\n')
  } else if (typeof args.content === 'string') text = args.content
  else text = JSON.stringify(args, null, 2)
  return text.length > DETAIL_LIMIT
    ? `${text.slice(0, DETAIL_LIMIT)}\n… ${text.length - DETAIL_LIMIT} more characters`
    : text
}

/** The paths of a write (as named, or once links are followed) under Keel's protected list, shown relative to cwd. */
function protectedOf(paths: string[], real: string[], cwd: string): { path: string; entry: string }[] {
  const entries = protectedEntries(cwd)
  return paths.flatMap((path, i) => {
    const entry = protectedMatch(path, cwd, entries) ?? protectedMatch(real[i]!, realPath(cwd), entries)
    return entry ? [{ path: relative(cwd, path) || path, entry }] : []
  })
}
