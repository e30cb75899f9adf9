// The decision table: mode × what the call touches × rules → allow (at a sandbox level), deny, or ask.
// Pure: the service supplies the facts (access, whether paths are inside the cwd, sandbox availability).
import { analyzeCommand, type CommandAnalysis } from './command.ts'
import { isReadOnly } from './readonly.ts'
import { findDeny, findUnjudged, matchesCommand, matchesPath, matchesWholeTool, type Rule } from './rules.ts'
import { type PermissionMode, type SandboxLevel, type ToolAccess, type Verdict, writesNothing } from './types.ts'

export interface PolicyInput {
  mode: PermissionMode
  allow: readonly Rule[]
  deny: readonly Rule[]
  tool: string
  access: ToolAccess
  cwd: string
  /** Paths of the call that lie outside the working directory (judged on real paths). */
  outside: string[]
  /** The real paths of `access.paths` (symlinks resolved): deny rules match either. */
  real?: string[]
  /** Paths of a write that fall under Keel's protected list (@keel/settings), each with the entry it matched. */
  protected?: { path: string; entry: string }[]
  /** Hosts the person allowed for the network (`sandbox.allowedDomains`, `*.example.com` for subdomains). */
  allowedHosts?: readonly string[]
  /** Whether the OS sandbox can run commands here; when not, `reason` says why. */
  sandbox: { available: true } | { available: false; reason: string }
}

const SANDBOX_FOR: Record<PermissionMode, SandboxLevel> = {
  'read-only': 'read-only',
  plan: 'read-only',
  ask: 'workspace',
  auto: 'workspace',
  yolo: 'off',
}

const refusal = (mode: PermissionMode) => `denied by ${mode} mode`
/** What the model reads after a plan-mode refusal: how the mode ends. */
const planTail = (mode: PermissionMode) =>
  mode === 'plan' ? ' until the person approves a plan (explore with read tools, then call propose_plan)' : ''

export function decide(input: PolicyInput): Verdict {
  const { mode, access, tool } = input
  const analysis: CommandAnalysis | undefined =
    access.command !== undefined ? analyzeCommand(access.command) : undefined
  const commands = analysis?.commands

  const both = input.real?.length ? { ...access, paths: [...(access.paths ?? []), ...input.real] } : access
  const denied = findDeny(input.deny, tool, both, input.cwd, commands)
  if (denied) return { outcome: 'deny', scope: 'rule', rule: denied.text, reason: `denied by rule ${denied.text}` }
  const unjudged = findUnjudged(input.deny, tool, access, commands)
  if (unjudged) {
    const reason = `the deny rule ${unjudged.text} cannot judge this command (${analysis?.ok === false && !analysis.commands ? analysis.reason : 'it runs a word only known when it runs'})`
    // yolo never asks: a rule the person set wins over running unjudged.
    if (mode === 'yolo') return { outcome: 'deny', scope: 'rule', rule: unjudged.text, reason: `denied: ${reason}` }
    return { outcome: 'ask', reason, sandbox: SANDBOX_FOR[mode] }
  }

  if (access.kind === 'read') return { outcome: 'allow', scope: 'mode', sandbox: SANDBOX_FOR[mode], log: false }
  if (access.kind === 'network') return decideNetwork(input)
  if (mode === 'yolo') return { outcome: 'allow', scope: 'mode', sandbox: 'off', log: true }
  if (access.kind === 'execute') return decideCommand(input, analysis)

  const writes = access.kind === 'write'
  if (writes && writesNothing(mode))
    return { outcome: 'deny', scope: 'mode', reason: `${refusal(mode)}: nothing may be written${planTail(mode)}` }
  if (writes && input.outside.length) {
    // No rule lets a mode short of yolo write outside the working directory.
    const where = `${input.outside[0]} is outside the working directory ${input.cwd}`
    // A person who allows this one call allows it outside: the level 'off' lifts the file tools' confinement for it.
    if (mode === 'ask')
      return {
        outcome: 'ask',
        reason: where,
        sandbox: 'off',
        hint: 'only --mode yolo writes outside the working directory',
      }
    return {
      outcome: 'deny',
      scope: 'mode',
      reason: `denied by ${mode} mode: ${where} (only --mode yolo writes there)`,
    }
  }
  if (writes && input.protected?.length) return decideProtected(input)
  const allowed = allowRule(input)
  if (allowed) return { outcome: 'allow', scope: 'rule', rule: allowed.text, sandbox: SANDBOX_FOR[mode], log: true }
  if (mode === 'auto') return { outcome: 'allow', scope: 'mode', sandbox: 'workspace', log: true }
  if (mode === 'plan' && !writes && access.declaredReadOnly)
    return { outcome: 'allow', scope: 'mode', sandbox: 'read-only', log: true }
  if (writesNothing(mode))
    return { outcome: 'deny', scope: 'mode', reason: `${refusal(mode)}: ${tool} may change things${planTail(mode)}` }
  return {
    outcome: 'ask',
    reason: writes ? `${tool} changes files` : `${tool} is not known to be read-only`,
    sandbox: 'workspace',
  }
}

/**
 * A write to a file that decides the next run (Keel's settings, MCP config, git config and hooks): only the person
 * lets it through, once or by a path rule that names it, never a mode or a bare tool rule. Level `off` lifts the file
 * tools' own refusal for this one call.
 */
function decideProtected(input: PolicyInput): Verdict {
  const { tool, access, cwd } = input
  const hit = input.protected![0]!
  const named = input.allow.find(
    (rule) => rule.kind === 'path' && rule.tool === tool && access.paths!.every((p) => matchesPath(rule, p, cwd)),
  )
  if (named) return { outcome: 'allow', scope: 'rule', rule: named.text, sandbox: 'off', log: true }
  return {
    outcome: 'ask',
    reason: `${hit.path} is protected (${hit.entry}): it decides how Keel, git or your editor behave next`,
    sandbox: 'off',
    protected: true,
    hint: `only you can allow it: answer the ask, or add an allow rule naming the path, such as ${tool}(${hit.path})`,
  }
}

/** An allow rule covering the whole call: a bare tool rule, or a path rule matching every path. */
function allowRule(input: PolicyInput): Rule | undefined {
  const { tool, access, cwd } = input
  for (const rule of input.allow) {
    if (matchesWholeTool(rule, tool)) return rule
    if (
      rule.kind === 'path' &&
      rule.tool === tool &&
      access.paths?.length &&
      access.paths.every((p) => matchesPath(rule, p, cwd))
    )
      return rule
  }
  return undefined
}

function decideCommand(input: PolicyInput, analysis: CommandAnalysis | undefined): Verdict {
  const { mode, tool, access } = input
  const level = SANDBOX_FOR[mode]
  const command = access.command ?? ''
  const whole = input.allow.find(
    (rule) =>
      matchesWholeTool(rule, tool) ||
      (rule.kind === 'command-text' && rule.tool === tool && rule.command === command.trim()),
  )
  const parts = analysis?.ok ? analysis.commands : undefined
  // Every part must be allowed by a rule, or (in ask mode, sandboxed) be on the read-only list.
  let ruled: Rule | undefined = whole
  let readOnly = false
  if (!ruled && parts && parts.length) {
    const rules = parts.map((part) => input.allow.find((rule) => rule.tool === tool && matchesCommand(rule, part)))
    const fine = parts.every((part, i) => rules[i] !== undefined || isReadOnly(part))
    if (fine) {
      ruled = rules.find((rule) => rule !== undefined)
      readOnly = ruled === undefined
    }
  }

  if (!input.sandbox.available) {
    const why = input.sandbox.reason
    if (writesNothing(mode))
      return {
        outcome: 'deny',
        scope: 'mode',
        reason: `${refusal(mode)}: commands run only in the read-only sandbox, which is unavailable (${why})`,
      }
    // An explicit allow rule is the person's consent to run it; without the sandbox it runs unconfined.
    if (ruled) return { outcome: 'allow', scope: 'rule', rule: ruled.text, sandbox: 'off', log: true }
    if (mode === 'auto') {
      return {
        outcome: 'deny',
        scope: 'mode',
        reason: `denied by auto mode: the sandbox is unavailable (${why}); install bubblewrap, or run with --mode yolo`,
      }
    }
    return {
      outcome: 'ask',
      reason: `the sandbox is unavailable (${why})`,
      sandbox: 'off',
      hint: 'an --allow rule for it, or --mode yolo, lets it run unsandboxed',
    }
  }
  if (writesNothing(mode)) return { outcome: 'allow', scope: 'mode', sandbox: 'read-only', log: true }
  if (ruled) return { outcome: 'allow', scope: 'rule', rule: ruled.text, sandbox: level, log: true }
  if (mode === 'auto' || readOnly) return { outcome: 'allow', scope: 'mode', sandbox: level, log: true }
  const why = !analysis?.ok ? (analysis?.reason ?? 'no command') : 'the command may change things'
  return { outcome: 'ask', reason: why, sandbox: level }
}

/** Whether `host` is one of `allowed`: the same name, or under a `*.domain` entry (the sandbox's own reading). */
export function hostListed(host: string, allowed: readonly string[]): boolean {
  const name = host.toLowerCase()
  return allowed.some((entry) => {
    const pattern = entry.trim().toLowerCase()
    return pattern.startsWith('*.') ? name.endsWith(pattern.slice(1)) : name === pattern
  })
}

/**
 * A call that reaches hosts (web_fetch): a `tool(host)` rule names a host (`web_fetch(*.python.org)`), and the hosts
 * of `sandbox.allowedDomains` count as allowed, the same list commands reach. ask asks per host; auto and read-only
 * allow only listed hosts; yolo allows any. Which addresses a host may resolve to is the tool's own check.
 */
function decideNetwork(input: PolicyInput): Verdict {
  const { mode, tool, access } = input
  const hosts = access.hosts ?? []
  // No host: the URL does not parse, and the tool says so without reaching anything.
  if (!hosts.length) return { outcome: 'allow', scope: 'mode', sandbox: SANDBOX_FOR[mode], log: false }
  const ruleFor = (rules: readonly Rule[], host: string) =>
    rules.find(
      (rule) => rule.tool === tool && (matchesWholeTool(rule, tool) || (rule.kind === 'path' && rule.match(host))),
    )
  for (const host of hosts) {
    const denied = ruleFor(input.deny, host)
    if (denied) return { outcome: 'deny', scope: 'rule', rule: denied.text, reason: `denied by rule ${denied.text}` }
  }
  if (mode === 'yolo') return { outcome: 'allow', scope: 'mode', sandbox: 'off', log: true }
  const unlisted = hosts.filter((host) => !hostListed(host, input.allowedHosts ?? []))
  const ruled = unlisted.map((host) => ruleFor(input.allow, host))
  if (ruled.every((rule) => rule !== undefined)) {
    const rule = ruled[0]
    return rule
      ? { outcome: 'allow', scope: 'rule', rule: rule.text, sandbox: SANDBOX_FOR[mode], log: true }
      : { outcome: 'allow', scope: 'rule', rule: 'sandbox.allowedDomains', sandbox: SANDBOX_FOR[mode], log: true }
  }
  const host = unlisted.find((_, i) => !ruled[i]) ?? '(no host)'
  const where = `${host} is not on sandbox.allowedDomains and no ${tool}(host) rule allows it`
  if (mode === 'ask') return { outcome: 'ask', reason: where, sandbox: 'workspace', hint: `--allow '${tool}(${host})'` }
  return {
    outcome: 'deny',
    scope: 'mode',
    reason: `denied by ${mode} mode: ${where} (add it to sandbox.allowedDomains, or --allow '${tool}(${host})')`,
  }
}
