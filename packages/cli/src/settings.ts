import { dirname, isAbsolute, resolve } from 'node:path'
import { pathToFileURL } from 'node:url'
import type { EntryOptions } from '@cordisjs/loader'
import Schema from 'schemastery'
import { type CommandSet, loadAgents, loadCommands, loadSkills, parseHooks } from '@keel/extend/found'
import {
  flatten,
  gateSettings,
  mergeLayers,
  readSettingsFiles,
  SettingsError,
  type Layer,
  type Merged,
  trustState,
  type HeldSetting,
  type SettingsFile,
  type TrustState,
} from '@keel/settings'
import { validateServers } from '@keel/mcp/config'
import { headerProblem, ModelSettingsSchema, ProviderSettingsSchema } from '@keel/llm/model-settings'
import { closest, escapeLine } from '@keel/session/text'
import { PROVIDER_NAMES, REASONING_EFFORTS } from '@keel/llm/providers'
import { DEFAULT_MODEL, type Flags, UsageError } from './args.ts'
import { DEFAULT_COMPOSITION, SHIPPED_COMPOSITION } from './composition.ts'
import { BUILTIN_PLUGINS } from './plugins.ts'
import { redactUrl } from '@keel/store-pg/url'

/** Settings keys that are not a plugin's own config, with the shape each must have. */
const permissionRule = Schema.string()
const CORE_KEYS = {
  model: Schema.string()
    .pattern(/^[^/\s]+\/\S+$/)
    .description('<provider>/<model>'),
  baseUrl: Schema.string()
    .pattern(/^https?:\/\//i)
    .description('an http(s) URL'),
  mode: Schema.union(['read-only', 'plan', 'ask', 'auto', 'yolo'] as const),
  permissions: Schema.object({ allow: Schema.array(permissionRule), deny: Schema.array(permissionRule) }),
  sandbox: Schema.object({
    level: Schema.union(['workspace', 'read-only', 'off'] as const),
    allowedDomains: Schema.array(String),
  }),
  protectedPaths: Schema.array(Schema.string()).description('a list of paths relative to the project'),
  // Checked server by server with @keel/mcp's own rules below, so an error names the server and the key.
  mcpServers: Schema.dict(Schema.any()),
  // Print mode's limits (print-limits.ts reads them; its flags win). A budget only narrows what a run may do.
  print: Schema.object({
    maxTurns: Schema.natural().min(1),
    timeout: Schema.union([Schema.string(), Schema.number()]),
    maxBudgetUsd: Schema.number(),
    failOnDenial: Schema.boolean(),
  }),
  // claude-code's hooks; @keel/extend checks each entry itself (a bad one is a warning naming file and line).
  hooks: Schema.dict(Schema.any()),
  // How and when a door calls the person back (@keel/door/call-back): a turn ended, an approval waits.
  notify: Schema.union(['bell', 'desktop', 'off'] as const),
  notifyWhen: Schema.union(['unfocused', 'always'] as const),
  // Per model: catalog overrides and how it thinks, handed to the llm plugin as its `models`.
  models: ModelSettingsSchema,
  // Per provider: extra request headers (a gateway's routing and key), handed to the llm plugin as its `providers`.
  providers: ProviderSettingsSchema,
  // Where the session logs live (@keel/store-pg); the JSONL files under $KEEL_HOME when unset. Never from an
  // untrusted project (the trust gate holds it back): a project must not send the person's logs elsewhere.
  store: Schema.string()
    .pattern(/^postgres(ql)?:\/\//i)
    .description('a postgres:// connection string'),
} satisfies Record<string, Schema>

/** The composition entry that takes `models`. */
const LLM_ENTRY = 'llm'

/** The composition entry that takes each file's `hooks` (as its `hookFiles`). */
const EXTEND_ENTRY = 'extend'

/** The composition entry that takes `mcpServers` (as its `servers`). */
const MCP_ENTRY = 'mcp'

/** The composition entry of web_fetch, which takes the exact hosts of `sandbox.allowedDomains` as `privateHosts`. */
const FETCH_ENTRY = 'fetch'

/** The composition entry that takes `mode`, `permissions` and `sandbox` (as `{ mode, allow, deny, sandbox }`). */
const PERMISSIONS_ENTRY = 'permissions'

export interface ResolvedSettings {
  /** The files as they apply: an untrusted folder's project files keep only what narrows (@keel/settings' trust). */
  files: SettingsFile[]
  /** Whether the project folder is trusted, and what trusting it covers. */
  trust: TrustState
  /** What the project files asked for and did not get (empty once trusted). */
  held: HeldSetting[]
  merged: Merged
  model: string
  baseUrl?: string
  /** Where the session logs live: a postgres:// URL, or undefined for the JSONL files. */
  store?: string
  /** Composition entry id → the config it loads with (only entries the settings change). */
  overrides: Record<string, Record<string, unknown>>
}

async function readComposition(path: string): Promise<EntryOptions[]> {
  // The shipped file is also compiled in (composition.ts): reading it needs no YAML parser.
  if (resolve(path) === DEFAULT_COMPOSITION) return structuredClone(SHIPPED_COMPOSITION) as EntryOptions[]
  const ext = path.slice(path.lastIndexOf('.'))
  try {
    const { LoaderFile } = await import('@cordisjs/loader')
    const entries = await new LoaderFile(path, LoaderFile.writable[ext as keyof typeof LoaderFile.writable]).read()
    return Array.isArray(entries) ? entries : []
  } catch {
    return []
  }
}

async function pluginConfig(name: string, composition: string): Promise<Schema | undefined> {
  try {
    const builtin = BUILTIN_PLUGINS[name]
    const mod = (
      builtin
        ? await builtin()
        : await import(
            name.startsWith('.') || isAbsolute(name) ? pathToFileURL(resolve(dirname(composition), name)).href : name
          )
    ) as { Config?: unknown }
    const config = mod.Config as Schema | undefined
    return typeof config === 'function' && typeof config.type === 'string' ? config : undefined
  } catch {
    return undefined
  }
}

/** schemastery's message with its `$` root replaced by the settings key. */
function expected(error: unknown, key: string): string {
  const message = error instanceof Error ? error.message : String(error)
  return message.startsWith('$') ? key + message.slice(1) : `${key} ${message}`
}

function isObject(value: unknown): value is Record<string, unknown> {
  return !!value && typeof value === 'object' && !Array.isArray(value)
}

/** Checks one file against the core keys and the plugins' schemas: the first problem is one line naming file and key. */
async function validate(file: SettingsFile, entries: EntryOptions[], composition: string): Promise<void> {
  const plugins = new Map(entries.map((entry) => [entry.id, entry]))
  for (const [key, value] of Object.entries(file.data)) {
    const core = CORE_KEYS[key as keyof typeof CORE_KEYS]
    if (core) {
      try {
        if (isObject(value) && 'dict' in core && core.dict && !['mcpServers', 'models', 'providers'].includes(key))
          rejectUnknown(file, key, value, Object.keys(core.dict))
        ;(core as Schema)(value)
        if (key === 'sandbox') await checkDomains(file, value as { allowedDomains?: string[] })
        if (key === 'providers') checkProviders(file, value as Record<string, { headers?: Record<string, string> }>)
      } catch (error) {
        if (error instanceof SettingsError) throw error
        // A pattern's own message shows the regexp; say what the pattern means instead.
        const message =
          core.meta.description && key !== 'models' && key !== 'providers'
            ? `${key} expected ${core.meta.description} but got ${JSON.stringify(value)}`
            : expected(error, key)
        throw new SettingsError(`${file.path}: ${message}`)
      }
      continue
    }
    const entry = plugins.get(key) ?? (BUILTIN_PLUGINS[`@keel/${key}`] ? { id: key, name: `@keel/${key}` } : undefined)
    if (!entry) {
      const known = [...new Set([...Object.keys(CORE_KEYS), ...plugins.keys()])]
      const guess = closest(key, known)
      throw new SettingsError(
        `${file.path}: unknown setting ${JSON.stringify(key)}${guess ? ` (did you mean ${guess}?)` : ''}; known: ${known.join(', ')}`,
      )
    }
    if (!isObject(value))
      throw new SettingsError(
        `${file.path}: ${key} expected an object of ${entry.name} settings but got ${JSON.stringify(value)}`,
      )
    const schema = await pluginConfig(entry.name, composition)
    if (!schema) continue
    if (schema.dict) rejectUnknown(file, key, value, Object.keys(schema.dict))
    try {
      schema({ ...(isObject(entry.config) ? entry.config : {}), ...value })
    } catch (error) {
      throw new SettingsError(`${file.path}: ${expected(error, key)}`)
    }
  }
}

/** A repository must not decide what its runs cost (a budget reads the price): prices come from the user's file. */
function refuseProjectPrices(file: SettingsFile): void {
  const models = file.data.models
  if (!isObject(models)) return
  for (const [key, value] of Object.entries(models)) {
    if (isObject(value) && 'price' in value)
      throw new SettingsError(
        `${file.path}: models.${key}.price is read only from your own settings ($KEEL_HOME/settings.json): a project cannot set what its runs cost`,
      )
  }
}

async function checkDomains(file: SettingsFile, sandbox: { allowedDomains?: string[] }): Promise<void> {
  if (!sandbox.allowedDomains?.length) return
  // The sandbox runtime's own rule, loaded only when there is something to check: a plain start never parses it.
  const { domainProblem } = await import('@keel/sandbox/domains')
  for (const entry of sandbox.allowedDomains) {
    const problem = domainProblem(entry)
    if (problem)
      throw new SettingsError(`${file.path}: sandbox.allowedDomains: ${JSON.stringify(entry)} is refused. ${problem}`)
  }
}

/** Each provider named is one Keel has, each header one it may send: one line naming the file and the key. */
function checkProviders(file: SettingsFile, providers: Record<string, { headers?: Record<string, string> }>): void {
  const known: readonly string[] = PROVIDER_NAMES
  for (const [provider, settings] of Object.entries(providers)) {
    if (!known.includes(provider)) {
      const guess = closest(provider, [...known])
      throw new SettingsError(
        `${file.path}: unknown provider providers.${provider}${guess ? ` (did you mean providers.${guess}?)` : ''}; known: ${known.join(', ')}`,
      )
    }
    for (const [name, value] of Object.entries(settings.headers ?? {})) {
      const problem = headerProblem(name, value, process.env)
      if (problem) throw new SettingsError(`${file.path}: providers.${provider}.headers.${name}: ${problem}`)
    }
  }
}

function rejectUnknown(file: SettingsFile, key: string, value: Record<string, unknown>, known: string[]): void {
  for (const inner of Object.keys(value)) {
    if (known.includes(inner)) continue
    const guess = closest(inner, known) ?? known.find((name) => name.toLowerCase().startsWith(inner.toLowerCase()))
    throw new SettingsError(
      `${file.path}: unknown setting ${key}.${inner}${guess ? ` (did you mean ${key}.${guess}?)` : ''}; ${key} takes ${known.join(', ')}`,
    )
  }
}

/**
 * Settings from lowest to highest precedence: defaults (the composition's configs), the user's file, the project's
 * files (root first), the environment, the flags. Validated before anything boots.
 */
export async function resolveSettings(flags: Flags, cwd: string, composition: string): Promise<ResolvedSettings> {
  const entries = await readComposition(composition)
  const read = readSettingsFiles(cwd)
  for (const file of read) {
    await validate(file, entries, composition)
    if (file.scope === 'project') refuseProjectPrices(file)
  }
  // Held back or not, a server entry that cannot work is named now (checking runs nothing).
  for (const file of read) {
    if (file.data.mcpServers === undefined) continue
    try {
      validateServers(file.data.mcpServers, 'mcpServers')
    } catch (error) {
      throw new SettingsError(`${file.path}: ${(error as Error).message}`)
    }
  }
  const trust = trustState(cwd)
  const userModel = read.find((file) => file.scope === 'user')?.data.model
  const { files, held } = gateSettings(read, trust, typeof userModel === 'string' ? userModel : DEFAULT_MODEL)
  const defaults: Record<string, unknown> = { model: DEFAULT_MODEL }
  for (const entry of entries)
    if (entry.id !== PERMISSIONS_ENTRY && isObject(entry.config) && !entry.disabled) defaults[entry.id] = entry.config
  const layers: Layer[] = [
    { source: `default (${composition})`, values: defaults },
    ...files.map((file) => ({ source: file.path, values: file.data })),
    { source: 'env KEEL_MODEL', values: { model: process.env.KEEL_MODEL?.trim() || undefined } },
    { source: 'env KEEL_STORE', values: { store: process.env.KEEL_STORE?.trim() || undefined } },
    { source: 'flag --store', values: { store: flags.store } },
    { source: 'flag --model', values: { model: flags.model } },
    { source: 'flag --base-url', values: { baseUrl: flags['base-url'] } },
  ]
  // --allow-domain adds to sandbox.allowedDomains (the list accumulates across layers), checked like a file's entry.
  const domainFlag = flags['allow-domain'] ?? []
  if (domainFlag.length) {
    const { domainProblem } = await import('@keel/sandbox/domains')
    for (const entry of domainFlag) {
      const problem = domainProblem(entry)
      if (problem) throw new UsageError(`--allow-domain ${JSON.stringify(entry)} is refused. ${problem}`)
    }
    layers.push({ source: 'flag --allow-domain', values: { sandbox: { allowedDomains: domainFlag } } })
  }
  let merged = mergeLayers(layers)
  if (flags.effort !== undefined && !(REASONING_EFFORTS as readonly string[]).includes(flags.effort))
    throw new UsageError(`--effort must be one of ${REASONING_EFFORTS.join(', ')}, not ${JSON.stringify(flags.effort)}`)
  if (flags.effort) {
    // The flag is the chosen model's setting for this run, shown and applied like one from a file.
    const models = { [merged.values.model as string]: { reasoningEffort: flags.effort } }
    layers.push({ source: 'flag --effort', values: { models } })
    merged = mergeLayers(layers)
  }
  merged.sources.model = merged.sources.model === `default (${composition})` ? 'default' : merged.sources.model!
  const overrides: Record<string, Record<string, unknown>> = {}
  const touched = new Set([
    ...files.flatMap((file) => Object.keys(file.data)),
    ...(flags.effort ? ['models'] : []),
    ...(domainFlag.length ? ['sandbox'] : []),
  ])
  for (const entry of entries) {
    if (entry.id !== PERMISSIONS_ENTRY && touched.has(entry.id) && isObject(merged.values[entry.id]))
      overrides[entry.id] = merged.values[entry.id] as Record<string, unknown>
  }
  const permissions = entries.find((entry) => entry.id === PERMISSIONS_ENTRY)
  if (permissions && (touched.has('mode') || touched.has('permissions') || touched.has('sandbox'))) {
    const rules = (merged.values.permissions ?? {}) as { allow?: string[]; deny?: string[] }
    const config = { ...(isObject(permissions.config) ? permissions.config : {}) } as Record<string, unknown>
    if (merged.values.mode !== undefined) config.mode = merged.values.mode
    if (rules.allow) config.allow = rules.allow
    if (rules.deny) config.deny = rules.deny
    if (merged.values.sandbox !== undefined)
      config.sandbox = { ...(isObject(config.sandbox) ? config.sandbox : {}), ...(merged.values.sandbox as object) }
    const schema = await pluginConfig(permissions.name, composition)
    try {
      schema?.(config)
    } catch (error) {
      throw new SettingsError(
        `${files
          .filter((file) => ['mode', 'permissions', 'sandbox'].some((key) => key in file.data))
          .map((file) => file.path)
          .join(', ')}: ${expected(error, 'permissions')}`,
      )
    }
    overrides[PERMISSIONS_ENTRY] = config
  }
  // web_fetch reaches a loopback, private or link-local address only for a host the person named exactly.
  const fetch = entries.find((entry) => entry.id === FETCH_ENTRY)
  const domains = (merged.values.sandbox as { allowedDomains?: unknown } | undefined)?.allowedDomains
  if (fetch && touched.has('sandbox') && Array.isArray(domains))
    overrides[FETCH_ENTRY] = {
      ...(isObject(fetch.config) ? fetch.config : {}),
      ...overrides[FETCH_ENTRY],
      privateHosts: domains.filter((entry): entry is string => typeof entry === 'string' && !entry.includes('*')),
    }
  if (touched.has('mcpServers')) {
    const where = files
      .filter((file) => 'mcpServers' in file.data)
      .map((file) => file.path)
      .join(', ')
    let servers
    try {
      servers = validateServers(merged.values.mcpServers ?? {}, 'mcpServers')
    } catch (error) {
      throw new SettingsError(`${where}: ${(error as Error).message}`)
    }
    const mcp = entries.find((entry) => entry.id === MCP_ENTRY)
    if (mcp) overrides[MCP_ENTRY] = { ...(isObject(mcp.config) ? mcp.config : {}), ...overrides[MCP_ENTRY], servers }
  }
  // Hooks add up across files, as claude-code's do; an untrusted project's were already held back by the gate.
  const extend = entries.find((entry) => entry.id === EXTEND_ENTRY)
  if (extend && touched.has('hooks'))
    overrides[EXTEND_ENTRY] = {
      ...(isObject(extend.config) ? extend.config : {}),
      hookFiles: files
        .filter((file) => file.data.hooks !== undefined)
        .map((file) => ({ path: file.path, hooks: file.data.hooks })),
    }
  for (const key of ['models', 'providers'] as const) {
    const llm = entries.find((entry) => entry.id === LLM_ENTRY)
    if (llm && touched.has(key))
      overrides[LLM_ENTRY] = {
        ...(isObject(llm.config) ? llm.config : {}),
        ...overrides[LLM_ENTRY],
        [key]: merged.values[key],
      }
  }
  return {
    files,
    trust,
    held,
    merged,
    model: merged.values.model as string,
    baseUrl: merged.values.baseUrl as string | undefined,
    ...(merged.values.store ? { store: merged.values.store as string } : {}),
    overrides,
  }
}

/** `keel config`: the merged settings, one `key value source` line each, or the same as JSON. */
export function describeSettings(resolved: ResolvedSettings, json: boolean): string {
  const { files, merged, held, trust } = resolved
  const commands = loadCommands(trust.folder)
  const skills = loadSkills(trust.folder)
  const agents = loadAgents(trust.folder)
  const hooks = parseHooks(
    files.filter((file) => file.data.hooks !== undefined).map((file) => ({ path: file.path, hooks: file.data.hooks })),
  )
  if (json)
    return JSON.stringify(
      {
        files: files.map(({ path, scope }) => ({ path, scope })),
        settings: merged.values.store
          ? { ...merged.values, store: redactUrl(String(merged.values.store)) }
          : merged.values,
        sources: merged.sources,
        trust: { folder: trust.folder, trusted: trust.trusted, held },
        commands: {
          found: commands.commands.map(({ name, path, scope, description }) => ({ name, path, scope, description })),
          folders: commands.folders,
          skipped: commands.warnings,
        },
        skills: {
          found: skills.skills.map(({ name, path, scope, description }) => ({ name, path, scope, description })),
          folders: skills.folders,
          skipped: skills.warnings,
        },
        agents: {
          found: agents.agents.map(({ name, path, scope, description, tools, model }) => ({
            name,
            path,
            scope,
            description,
            ...(tools ? { tools } : {}),
            ...(model ? { model } : {}),
          })),
          folders: agents.folders,
          skipped: agents.warnings,
        },
        hooks: {
          found: hooks.hooks.map(({ event, matcher, command, timeout, file }) => ({
            event,
            matcher,
            command,
            timeout,
            file,
          })),
          skipped: hooks.warnings,
        },
      },
      null,
      2,
    )
  const rows = flatten(merged.values).map(
    ([key, value]) =>
      [key, JSON.stringify(key === 'store' ? redactUrl(String(value)) : value), merged.sources[key] ?? ''] as const,
  )
  const width = Math.max(...rows.map(([key]) => key.length))
  const valueWidth = Math.min(40, Math.max(...rows.map(([, value]) => value.length)))
  const lines = ['Settings files (lowest precedence first):']
  if (!files.length) lines.push('  none (see README: Settings)')
  for (const file of files) lines.push(`  ${file.path} (${file.scope})`)
  lines.push('', 'Precedence: flags, then environment, then project, then user, then defaults.', '')
  for (const [key, value, source] of rows) lines.push(`${key.padEnd(width)}  ${value.padEnd(valueWidth)}  ${source}`)
  if (held.length) {
    lines.push('', `Held back until you trust ${trust.folder} (keel trust, or --trust for one run):`)
    for (const entry of held) lines.push(`  ${entry.key}  ${entry.file}`)
  }
  lines.push('', ...commandLines(commands, trust.trusted && trust.hash !== ''))
  lines.push('', 'Skills (first of a name wins):')
  for (const folder of skills.folders)
    lines.push(`  ${escapeLine(folder.path)} (${folder.scope}): ${folder.found} found`)
  for (const skill of skills.skills)
    lines.push(`  ${escapeLine(skill.name)}  ${escapeLine(skill.description.slice(0, 100))}`)
  for (const warning of skills.warnings) lines.push(`  ${escapeLine(warning)}`)
  lines.push('', 'Agents (first of a name wins):')
  for (const folder of agents.folders)
    lines.push(`  ${escapeLine(folder.path)} (${folder.scope}): ${folder.found} found`)
  for (const agent of agents.agents)
    lines.push(
      `  ${escapeLine(agent.name)}  ${escapeLine(agent.description.slice(0, 100))}${agent.tools ? `  tools: ${escapeLine(agent.tools.join(', '))}` : ''}`,
    )
  for (const warning of agents.warnings) lines.push(`  ${escapeLine(warning)}`)
  lines.push(
    '',
    `Hooks${held.some((entry) => entry.key === 'hooks') ? " (the project's are held back until you trust it)" : ''}:`,
  )
  if (!hooks.hooks.length) lines.push('  none')
  for (const hook of hooks.hooks)
    lines.push(
      `  ${hook.event}${hook.matcher ? `(${escapeLine(hook.matcher)})` : ''}  ${escapeLine(hook.command)}  ${escapeLine(hook.file)}`,
    )
  for (const warning of hooks.warnings) lines.push(`  ${escapeLine(warning)}`)
  return lines.join('\n')
}

/** The slash command files found, where, and what was skipped or waits for trust (@keel/extend's discovery). */
function commandLines(set: CommandSet, trusted: boolean): string[] {
  const lines = ['Slash commands (first of a name wins):']
  for (const folder of set.folders) lines.push(`  ${escapeLine(folder.path)} (${folder.scope}): ${folder.found} found`)
  for (const command of set.commands) {
    const waits = command.scope === 'project' && !trusted && /!`[^`\n]+`/.test(command.body)
    lines.push(
      `  /${command.name}  ${escapeLine(command.description)}${waits ? '  (its !`cmd` lines wait for keel trust)' : ''}`,
    )
  }
  for (const warning of set.warnings) lines.push(`  ${escapeLine(warning)}`)
  return lines
}
