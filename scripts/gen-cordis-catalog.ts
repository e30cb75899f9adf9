/**
 * Cordis catalog generator.
 *
 * Parses `packages/*\/src/**\/*.ts` with the TypeScript compiler API (syntax only, no type checker) and collects:
 * - every member of `declare module 'cordis' { interface Events { … } }`: name, signature, JSDoc description and
 *   its `@mode emit|parallel|serial|bail|waterfall` tag;
 * - every member of `declare module 'cordis' { interface Context { … } }` (service keys), with the public methods
 *   of the class (or interface) of that name declared in the same package.
 *
 * - every member of `SessionEventMap` (declared in `@keel/session`, merged into from other packages with
 *   `declare module '@keel/session'`): the session-log event types, with their package, data shape and whether
 *   they are on the model surface (`SurfaceEventType`). They are not cordis events and carry no `@mode`.
 *
 * It validates the events (description present, exactly one known `@mode`, `waterfall` ⇔ trailing `next`
 * parameter, literal `ctx.emit/parallel/serial/bail('name', …)` dispatches agree with the tag) and renders
 * `docs/cordis-catalog.md`.
 *
 *   npm run catalog                    regenerate docs/cordis-catalog.md
 *   npm run catalog -- --check         exit 1 if the committed file is stale (CI)
 *   npm run catalog -- --root <dir>    operate on another tree (tests use fixtures)
 */
import { existsSync, readdirSync, readFileSync, realpathSync, statSync, writeFileSync, mkdirSync } from 'node:fs'
import { dirname, join, relative, resolve, sep } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import ts from 'typescript'

export const MODES = ['emit', 'parallel', 'serial', 'bail', 'waterfall'] as const
export type Mode = (typeof MODES)[number]

/** Path of the generated file, relative to the root. */
export const CATALOG_PATH = 'docs/cordis-catalog.md'

/** The repository this script lives in (the default `--root`). */
export const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..')

const DISPATCHERS = new Set(['emit', 'parallel', 'serial', 'bail'])
const MODE_LIST = MODES.join('|')

export interface CatalogEvent {
  name: string
  /** The part of the name before the first `/` (empty when there is none). */
  group: string
  mode: Mode
  /** `(a: A, b: B): R`, whitespace-normalized. */
  signature: string
  description: string
  file: string
  line: number
}

export interface CatalogMethod {
  signature: string
  /** First sentence/paragraph of the method's JSDoc, if any. */
  description: string
}

export interface CatalogService {
  key: string
  /** The declared type as written (`SessionStore`). */
  type: string
  /** Where the `interface Context` member is. */
  file: string
  line: number
  /** The class/interface found for `type` in the same package, if any. */
  declaration?: { kind: 'class' | 'interface'; name: string; file: string; line: number; description: string }
  methods: CatalogMethod[]
}

/** A session-log event type: a member of `SessionEventMap`. */
export interface CatalogLogEvent {
  name: string
  /** The npm name of the package that declares it (`@keel/todo`). */
  pkg: string
  /** The `data` type as written, whitespace-normalized. */
  data: string
  /** It produces a model-visible message (a member of `SurfaceEventType`). */
  surface: boolean
  description: string
  file: string
  line: number
}

export interface Catalog {
  events: CatalogEvent[]
  services: CatalogService[]
  logEvents: CatalogLogEvent[]
  /** One line per problem, `file:line: what is wrong — what to do`. Empty when the tree is valid. */
  problems: string[]
  /** Number of source files scanned. */
  files: number
}

// ---------------------------------------------------------------------------------------------------------------
// Scanning

interface SourceEntry {
  pkg: string
  rel: string
  sf: ts.SourceFile
}
interface Dispatch {
  method: string
  name: string
  file: string
  line: number
}

/** Codepoint order: stable across locales and Node versions. */
function cmp(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0
}

function toPosix(path: string): string {
  return sep === '/' ? path : path.split(sep).join('/')
}

function listSourceFiles(root: string): { pkg: string; abs: string }[] {
  const packagesDir = join(root, 'packages')
  if (!existsSync(packagesDir)) throw new Error(`no packages/ directory under ${root}`)
  const out: { pkg: string; abs: string }[] = []
  const walk = (pkg: string, dir: string): void => {
    for (const entry of readdirSync(dir, { withFileTypes: true }).sort((a, b) => cmp(a.name, b.name))) {
      if (entry.name === 'node_modules' || entry.name.startsWith('.')) continue
      const abs = join(dir, entry.name)
      if (entry.isDirectory()) walk(pkg, abs)
      else if (entry.isFile() && entry.name.endsWith('.ts')) out.push({ pkg, abs })
    }
  }
  for (const pkg of readdirSync(packagesDir).sort(cmp)) {
    const src = join(packagesDir, pkg, 'src')
    if (existsSync(src) && statSync(src).isDirectory()) walk(pkg, src)
  }
  return out
}

function lineOf(sf: ts.SourceFile, node: ts.Node): number {
  return sf.getLineAndCharacterOfPosition(node.getStart(sf)).line + 1
}

function squash(text: string): string {
  return text.replace(/\s+/g, ' ').trim()
}

/** A type on one line: the members of a type literal the formatter spread over lines (no semicolons) get theirs back. */
function squashType(text: string): string {
  return squash(text.replace(/([^\s{;,(|&])[ \t]*\n\s*(?=[\w'"[])/g, '$1; '))
}

function memberName(name: ts.PropertyName | undefined, sf: ts.SourceFile): string | undefined {
  if (!name) return undefined
  if (
    ts.isIdentifier(name) ||
    ts.isStringLiteral(name) ||
    ts.isNoSubstitutionTemplateLiteral(name) ||
    ts.isNumericLiteral(name)
  )
    return name.text
  if (ts.isPrivateIdentifier(name)) return name.text
  if (ts.isComputedPropertyName(name)) return `[${squash(name.expression.getText(sf))}]`
  return undefined
}

function jsDocs(node: ts.Node): ts.JSDoc[] {
  return ts.getJSDocCommentsAndTags(node).filter((d): d is ts.JSDoc => ts.isJSDoc(d))
}

function docText(comment: string | ts.NodeArray<ts.JSDocComment> | undefined): string {
  return squash(ts.getTextOfJSDocComment(comment) ?? '')
}

/** The description of the closest JSDoc block that has one. */
function descriptionOf(node: ts.Node): string {
  const docs = jsDocs(node)
  for (let i = docs.length - 1; i >= 0; i--) {
    const text = docText(docs[i].comment)
    if (text) return text
  }
  return ''
}

/** First paragraph of a JSDoc comment, on one line. */
function summaryOf(node: ts.Node): string {
  const docs = jsDocs(node)
  for (let i = docs.length - 1; i >= 0; i--) {
    const raw = ts.getTextOfJSDocComment(docs[i].comment)?.trim()
    if (raw) return squash(raw.split(/\n\s*\n/)[0])
  }
  return ''
}

function paramText(p: ts.ParameterDeclaration, sf: ts.SourceFile): string {
  const optional = p.questionToken || p.initializer ? '?' : ''
  const rest = p.dotDotDotToken ? '...' : ''
  const type = p.type ? `: ${p.type.getText(sf)}` : ''
  return squash(`${rest}${p.name.getText(sf)}${optional}${type}`)
}

function signatureText(
  sf: ts.SourceFile,
  typeParameters: ts.NodeArray<ts.TypeParameterDeclaration> | undefined,
  parameters: ts.NodeArray<ts.ParameterDeclaration>,
  returnType: ts.TypeNode | undefined,
): string {
  const tps = typeParameters?.length ? `<${typeParameters.map((t) => squash(t.getText(sf))).join(', ')}>` : ''
  const ret = returnType ? `: ${squash(returnType.getText(sf))}` : ''
  return `${tps}(${parameters.map((p) => paramText(p, sf)).join(', ')})${ret}`
}

/** Parameters + return type of an `Events` member written as a method or as a function-typed property. */
function callableOf(member: ts.TypeElement):
  | {
      typeParameters?: ts.NodeArray<ts.TypeParameterDeclaration>
      parameters: ts.NodeArray<ts.ParameterDeclaration>
      type?: ts.TypeNode
    }
  | undefined {
  if (ts.isMethodSignature(member)) return member
  if (ts.isPropertySignature(member) && member.type) {
    let type: ts.TypeNode = member.type
    while (ts.isParenthesizedTypeNode(type)) type = type.type
    if (ts.isFunctionTypeNode(type)) return type
  }
  return undefined
}

/** `interface <name>` declarations directly inside `declare module 'cordis' { … }`. */
function cordisInterfaces(sf: ts.SourceFile, name: string): ts.InterfaceDeclaration[] {
  const out: ts.InterfaceDeclaration[] = []
  for (const stmt of sf.statements) {
    if (!ts.isModuleDeclaration(stmt) || !ts.isStringLiteral(stmt.name) || stmt.name.text !== 'cordis') continue
    if (!stmt.body || !ts.isModuleBlock(stmt.body)) continue
    for (const inner of stmt.body.statements) {
      if (ts.isInterfaceDeclaration(inner) && inner.name.text === name) out.push(inner)
    }
  }
  return out
}

/** `SessionEventMap` declarations: top-level in `@keel/session` itself, or merged in `declare module '@keel/session'`. */
function sessionEventMaps(sf: ts.SourceFile): ts.InterfaceDeclaration[] {
  const out: ts.InterfaceDeclaration[] = []
  for (const stmt of sf.statements) {
    if (ts.isInterfaceDeclaration(stmt) && stmt.name.text === 'SessionEventMap') out.push(stmt)
    if (!ts.isModuleDeclaration(stmt) || !ts.isStringLiteral(stmt.name) || stmt.name.text !== '@keel/session') continue
    if (!stmt.body || !ts.isModuleBlock(stmt.body)) continue
    for (const inner of stmt.body.statements) {
      if (ts.isInterfaceDeclaration(inner) && inner.name.text === 'SessionEventMap') out.push(inner)
    }
  }
  return out
}

/** The string literals of `type SurfaceEventType = 'a' | 'b'`, wherever it is declared. */
function surfaceTypes(sf: ts.SourceFile, out: Set<string>): void {
  for (const stmt of sf.statements) {
    if (!ts.isTypeAliasDeclaration(stmt) || stmt.name.text !== 'SurfaceEventType') continue
    const members = ts.isUnionTypeNode(stmt.type) ? stmt.type.types : [stmt.type]
    for (const member of members) {
      if (ts.isLiteralTypeNode(member) && ts.isStringLiteral(member.literal)) out.add(member.literal.text)
    }
  }
}

function scanLogEvents(entry: SourceEntry, pkgName: string, out: Omit<CatalogLogEvent, 'surface'>[]): void {
  const { sf, rel } = entry
  for (const decl of sessionEventMaps(sf)) {
    for (const member of decl.members) {
      const name = memberName(member.name, sf)
      if (!name || !ts.isPropertySignature(member) || !member.type) continue
      out.push({
        name,
        pkg: pkgName,
        data: squashType(member.type.getText(sf)),
        description: descriptionOf(member),
        file: rel,
        line: lineOf(sf, member),
      })
    }
  }
}

/** The `name` in `packages/<dir>/package.json`, else the directory name. */
function packageName(root: string, dir: string): string {
  try {
    const name = (JSON.parse(readFileSync(join(root, 'packages', dir, 'package.json'), 'utf8')) as { name?: unknown })
      .name
    if (typeof name === 'string') return name
  } catch {}
  return dir
}

function scanEvents(entry: SourceEntry, events: CatalogEvent[], problems: string[]): void {
  const { sf, rel } = entry
  for (const decl of cordisInterfaces(sf, 'Events')) {
    for (const member of decl.members) {
      const line = lineOf(sf, member)
      const at = `${rel}:${line}`
      const name = memberName(member.name, sf)
      if (!name) {
        problems.push(`${at}: cordis Events member has no readable name — declare it as 'prefix/name'(…): R`)
        continue
      }
      const callable = callableOf(member)
      if (!callable) {
        problems.push(`${at}: cordis event '${name}' is not a function signature — declare it as '${name}'(…): R`)
        continue
      }
      const docs = jsDocs(member)
      const description = descriptionOf(member)
      const modeTags = ts.getJSDocTags(member).filter((t) => t.tagName.text === 'mode')
      const params = callable.parameters.map((p) => (ts.isIdentifier(p.name) ? p.name.text : ''))
      const last = params[params.length - 1]

      if (docs.length === 0) {
        problems.push(
          `${at}: cordis event '${name}' has no JSDoc — add /** <what it means and when it fires> @mode <${MODE_LIST}> */ above it`,
        )
        continue
      }
      if (!description) {
        problems.push(
          `${at}: cordis event '${name}' has no description — add a sentence saying what it means and when it fires to its JSDoc, before the @mode tag`,
        )
      }
      if (modeTags.length === 0) {
        const hint = last === 'next' ? 'waterfall' : `<${MODE_LIST.replace('|waterfall', '')}>`
        problems.push(
          `${at}: cordis event '${name}' has no @mode tag — add "@mode ${hint}" to its JSDoc, matching how it is dispatched`,
        )
        continue
      }
      if (modeTags.length > 1) {
        problems.push(`${at}: cordis event '${name}' has ${modeTags.length} @mode tags — keep exactly one`)
        continue
      }
      const raw = docText(modeTags[0].comment)
      const mode = raw.split(' ')[0] as Mode
      if (!MODES.includes(mode)) {
        problems.push(
          `${at}: cordis event '${name}' has unknown @mode ${raw ? `'${raw}'` : '(empty)'} — use exactly one of ${MODE_LIST}`,
        )
        continue
      }
      if (mode === 'waterfall' && last !== 'next') {
        problems.push(
          `${at}: cordis event '${name}' is @mode waterfall but its signature has no trailing 'next' parameter — add 'next: (…) => …' as the last parameter, or change the @mode`,
        )
      }
      if (mode !== 'waterfall' && params.includes('next')) {
        problems.push(
          `${at}: cordis event '${name}' takes a 'next' parameter but is @mode ${mode} — only waterfall events take 'next': tag it "@mode waterfall" or drop the parameter`,
        )
      }
      events.push({
        name,
        group: name.includes('/') ? name.slice(0, name.indexOf('/')) : '',
        mode,
        signature: signatureText(sf, callable.typeParameters, callable.parameters, callable.type),
        description,
        file: rel,
        line,
      })
    }
  }
}

function stringArg(node: ts.Expression | undefined): string | undefined {
  if (node && (ts.isStringLiteral(node) || ts.isNoSubstitutionTemplateLiteral(node))) return node.text
  return undefined
}

/** Literal-named dispatches: `x.emit('name', …)` or `x.emit(thisArg, 'name', …)` (same for parallel/serial/bail). */
function scanDispatches(entry: SourceEntry, out: Dispatch[]): void {
  const { sf, rel } = entry
  const visit = (node: ts.Node): void => {
    if (ts.isCallExpression(node) && ts.isPropertyAccessExpression(node.expression)) {
      const method = node.expression.name.text
      if (DISPATCHERS.has(method)) {
        const name = stringArg(node.arguments[0]) ?? stringArg(node.arguments[1])
        if (name !== undefined) out.push({ method, name, file: rel, line: lineOf(sf, node) })
      }
    }
    ts.forEachChild(node, visit)
  }
  visit(sf)
}

type TypeDecl = ts.ClassDeclaration | ts.InterfaceDeclaration

function typeNameOf(type: ts.TypeNode | undefined): string | undefined {
  if (!type) return undefined
  if (ts.isTypeReferenceNode(type))
    return ts.isIdentifier(type.typeName) ? type.typeName.text : type.typeName.right.text
  return undefined
}

function isPublicMethod(member: ts.ClassElement): member is ts.MethodDeclaration {
  if (!ts.isMethodDeclaration(member)) return false
  if (member.name && ts.isPrivateIdentifier(member.name)) return false
  const mods = ts.getModifiers(member) ?? []
  if (
    mods.some(
      (m) =>
        m.kind === ts.SyntaxKind.PrivateKeyword ||
        m.kind === ts.SyntaxKind.ProtectedKeyword ||
        m.kind === ts.SyntaxKind.StaticKeyword,
    )
  )
    return false
  if (ts.getJSDocTags(member).some((t) => t.tagName.text === 'internal')) return false
  return true
}

function methodsOf(decl: TypeDecl, sf: ts.SourceFile): CatalogMethod[] {
  const out: CatalogMethod[] = []
  if (ts.isClassDeclaration(decl)) {
    const members = decl.members.filter(isPublicMethod)
    for (const m of members) {
      const name = memberName(m.name, sf)!
      // With overloads, list the overload signatures, not the implementation.
      const overloaded = members.some((o) => o !== m && !o.body && memberName(o.name, sf) === name)
      if (m.body && overloaded) continue
      const star = m.asteriskToken ? '*' : ''
      out.push({
        signature: `${star}${name}${signatureText(sf, m.typeParameters, m.parameters, m.type)}`,
        description: summaryOf(m),
      })
    }
  } else {
    for (const m of decl.members) {
      if (!ts.isMethodSignature(m)) continue
      out.push({
        signature: `${memberName(m.name, sf)}${signatureText(sf, m.typeParameters, m.parameters, m.type)}`,
        description: summaryOf(m),
      })
    }
  }
  return out
}

function findTypeDecl(name: string, entries: SourceEntry[]): { decl: TypeDecl; entry: SourceEntry } | undefined {
  let iface: { decl: TypeDecl; entry: SourceEntry } | undefined
  for (const entry of entries) {
    for (const stmt of entry.sf.statements) {
      if (ts.isClassDeclaration(stmt) && stmt.name?.text === name) return { decl: stmt, entry }
      if (!iface && ts.isInterfaceDeclaration(stmt) && stmt.name.text === name) iface = { decl: stmt, entry }
    }
  }
  return iface
}

function scanServices(entry: SourceEntry, byPackage: Map<string, SourceEntry[]>, services: CatalogService[]): void {
  const { sf, rel } = entry
  for (const decl of cordisInterfaces(sf, 'Context')) {
    for (const member of decl.members) {
      const key = memberName(member.name, sf)
      if (!key) continue
      const type =
        ts.isPropertySignature(member) && member.type
          ? squash(member.type.getText(sf))
          : ts.isMethodSignature(member)
            ? signatureText(sf, member.typeParameters, member.parameters, member.type)
            : ''
      const service: CatalogService = { key, type, file: rel, line: lineOf(sf, member), methods: [] }
      const typeName = ts.isPropertySignature(member) ? typeNameOf(member.type) : undefined
      const found = typeName ? findTypeDecl(typeName, byPackage.get(entry.pkg) ?? []) : undefined
      if (found) {
        service.declaration = {
          kind: ts.isClassDeclaration(found.decl) ? 'class' : 'interface',
          name: typeName!,
          file: found.entry.rel,
          line: lineOf(found.entry.sf, found.decl),
          description: summaryOf(found.decl),
        }
        service.methods = methodsOf(found.decl, found.entry.sf)
      }
      services.push(service)
    }
  }
}

/** Scans `<root>/packages/*\/src/**\/*.ts`. Never throws for problems in the sources; they land in `problems`. */
export function scanCatalog(root: string): Catalog {
  const entries: SourceEntry[] = listSourceFiles(root).map(({ pkg, abs }) => ({
    pkg,
    rel: toPosix(relative(root, abs)),
    sf: ts.createSourceFile(abs, readFileSync(abs, 'utf8'), ts.ScriptTarget.Latest, true, ts.ScriptKind.TS),
  }))
  const byPackage = new Map<string, SourceEntry[]>()
  for (const entry of entries) {
    const list = byPackage.get(entry.pkg) ?? []
    list.push(entry)
    byPackage.set(entry.pkg, list)
  }

  const events: CatalogEvent[] = []
  const services: CatalogService[] = []
  const problems: string[] = []
  const dispatches: Dispatch[] = []
  const found: Omit<CatalogLogEvent, 'surface'>[] = []
  const surface = new Set<string>()
  const names = new Map<string, string>()
  for (const entry of entries) {
    scanEvents(entry, events, problems)
    scanServices(entry, byPackage, services)
    scanDispatches(entry, dispatches)
    if (!names.has(entry.pkg)) names.set(entry.pkg, packageName(root, entry.pkg))
    scanLogEvents(entry, names.get(entry.pkg)!, found)
    surfaceTypes(entry.sf, surface)
  }
  const logEvents = found.map((e) => ({ ...e, surface: surface.has(e.name) }))

  // A literal dispatch must use the method its @mode names (waterfall has no cordis dispatcher, so it is not checked).
  const declared = new Map<string, CatalogEvent[]>()
  for (const event of events) declared.set(event.name, [...(declared.get(event.name) ?? []), event])
  for (const d of dispatches) {
    for (const event of declared.get(d.name) ?? []) {
      if (event.mode === 'waterfall' || event.mode === d.method) continue
      problems.push(
        `${d.file}:${d.line}: cordis event '${d.name}' is dispatched with .${d.method}() but ${event.file}:${event.line} tags it @mode ${event.mode} — dispatch it with .${event.mode}() or change the tag to "@mode ${d.method}"`,
      )
    }
  }

  events.sort(
    (a, b) =>
      cmp(a.group === '' ? '\uffff' : a.group, b.group === '' ? '\uffff' : b.group) ||
      cmp(a.name, b.name) ||
      cmp(a.file, b.file) ||
      a.line - b.line,
  )
  services.sort((a, b) => cmp(a.key, b.key) || cmp(a.file, b.file) || a.line - b.line)
  // The core vocabulary first, in declaration order (the order a turn writes them); then each package's, by name.
  const core = (e: CatalogLogEvent) => (e.pkg === '@keel/session' ? 0 : 1)
  logEvents.sort(
    (a, b) => core(a) - core(b) || (core(a) === 0 ? a.line - b.line : cmp(a.name, b.name)) || cmp(a.file, b.file),
  )
  return { events, services, logEvents, problems, files: entries.length }
}

// ---------------------------------------------------------------------------------------------------------------
// Rendering

/** Inline code that survives backticks. */
function code(text: string): string {
  return text.includes('`') ? `\`\` ${text} \`\`` : `\`${text}\``
}

/** Inline code inside a table cell: GFM needs `|` escaped even within code spans. */
function tcode(text: string): string {
  return code(text.replace(/\|/g, '\\|'))
}

function cell(text: string): string {
  return squash(text).replace(/\|/g, '\\|')
}

const MODE_NOTES: Record<Mode, string> = {
  emit: '`ctx.emit(…)`: synchronous, fire-and-forget; return values are ignored.',
  parallel: '`await ctx.parallel(…)`: listeners run concurrently and are awaited together.',
  serial:
    '`await ctx.serial(…)`: listeners run one after another, each awaited; the first result that is not `undefined`, `null` or `false` is returned and stops the rest.',
  bail: '`ctx.bail(…)`: listeners run in order, synchronously; the first result that is not `undefined`, `null` or `false` is returned and stops the rest.',
  waterfall: 'listeners are chained: each receives a trailing `next` and decides whether (and with what) to call it.',
}

export function renderCatalog(
  catalog: Pick<Catalog, 'events' | 'services'> & Partial<Pick<Catalog, 'logEvents'>>,
): string {
  const { events, services, logEvents = [] } = catalog
  const lines: string[] = []
  const push = (...l: string[]) => lines.push(...l)

  push(
    '# Cordis catalog',
    '',
    '<!-- Generated by scripts/gen-cordis-catalog.ts. Do not edit by hand: run `npm run catalog`. -->',
    '',
    `Every cordis event and service key declared in \`packages/*/src\`: ${events.length} event${events.length === 1 ? '' : 's'}, ` +
      `${services.length} service${services.length === 1 ? '' : 's'}.`,
    '',
    'Session log event types (`SessionEventMap` members such as `turn/start` or `todo/write`) are not cordis events: they',
    `all ride the one \`session/event\` emit and carry no \`@mode\`. Their ${logEvents.length} type${logEvents.length === 1 ? ' is' : 's are'} listed in their own table`,
    '([Session log event types](#session-log-event-types)); docs/architecture.md says who writes each one.',
    '',
    '## How this file is generated',
    '',
    '`scripts/gen-cordis-catalog.ts` parses `packages/*/src/**/*.ts` with the TypeScript compiler API and reads the',
    "members of `declare module 'cordis' { interface Events { … } }` and `interface Context { … }`.",
    '',
    '- `npm run catalog` rewrites this file; commit it with the change that added or changed an event or service.',
    '- `npm run catalog -- --check` (CI) exits 1 when this file is stale, and names the events that differ.',
    '- Every event needs a JSDoc description and exactly one `@mode` tag; a `waterfall` event takes a trailing `next`',
    "  parameter and no other mode may. A literal `ctx.emit/parallel/serial/bail('name', …)` must use the tagged mode.",
    '  Any violation fails the run with `file:line` and what to change.',
    "- Services list the public methods of the class named by the key's type, looked up in the same package.",
    '',
    'Modes:',
    '',
  )
  for (const mode of MODES) push(`- \`${mode}\` — ${MODE_NOTES[mode]}`)
  push('', '## Events', '')

  if (events.length === 0) push('_No cordis events are declared._', '')
  let group: string | undefined
  for (const [index, event] of events.entries()) {
    if (event.group !== group) {
      group = event.group
      push(
        `### ${group ? code(`${group}/*`) : 'No prefix'}`,
        '',
        '| Event | Mode | Signature | Description | Source |',
        '|---|---|---|---|---|',
      )
    }
    push(
      `| ${tcode(event.name)} | ${event.mode} | ${tcode(event.signature)} | ${cell(event.description)} | ${tcode(`${event.file}:${event.line}`)} |`,
    )
    if (events[index + 1]?.group !== group) push('')
  }

  push('## Session log event types', '')
  push(
    'Members of `SessionEventMap` in `packages/*/src`: what a session log can hold. "Surface" marks the types that become',
    'model-visible messages (`SurfaceEventType`); every other type is log-only.',
    '',
  )
  if (logEvents.length === 0) push('_No session log event types are declared._', '')
  else {
    push('| Type | Package | Surface | Data | Description | Source |', '|---|---|---|---|---|---|')
    for (const e of logEvents) {
      push(
        `| ${tcode(e.name)} | ${tcode(e.pkg)} | ${e.surface ? 'yes' : 'no'} | ${tcode(e.data)} | ${cell(e.description)} | ${tcode(`${e.file}:${e.line}`)} |`,
      )
    }
    push('')
  }

  push('## Services', '')
  if (services.length === 0) push('_No service keys are declared._', '')
  else {
    push('| ctx key | Type | Declared | Public methods |', '|---|---|---|---|')
    for (const s of services) {
      const count = s.declaration ? String(s.methods.length) : '—'
      push(`| ${tcode(`ctx.${s.key}`)} | ${tcode(s.type)} | ${tcode(`${s.file}:${s.line}`)} | ${count} |`)
    }
    push('')
  }
  for (const s of services) {
    push(`### ${code(`ctx.${s.key}`)}: ${code(s.type)}`, '')
    if (s.declaration) {
      const d = s.declaration
      if (d.description) push(d.description, '')
      push(
        `Key declared at ${code(`${s.file}:${s.line}`)}; ${d.kind} ${code(d.name)} at ${code(`${d.file}:${d.line}`)}.`,
        '',
      )
      if (s.methods.length === 0) push('_No public methods._', '')
      else {
        for (const m of s.methods) push(`- ${code(m.signature)}${m.description ? ` — ${m.description}` : ''}`)
        push('')
      }
    } else {
      push(
        `Key declared at ${code(`${s.file}:${s.line}`)}; no class or interface of that name in the same package.`,
        '',
      )
    }
  }
  return lines.join('\n').replace(/\n+$/, '') + '\n'
}

// ---------------------------------------------------------------------------------------------------------------
// Check and CLI

/** Names of event rows and service sections in a rendered catalog, with the line that describes them. */
function entriesOf(markdown: string): Map<string, string> {
  const out = new Map<string, string>()
  for (const line of markdown.split('\n')) {
    const logEvent = /^\| `([^`]+)` \| `[^`]+` \| (yes|no) \|/.exec(line)
    if (logEvent) out.set(`log event ${logEvent[1]}`, (out.get(`log event ${logEvent[1]}`) ?? '') + line)
    const event = /^\| `([^`]+)` \| (\w+) \|/.exec(line)
    if (event) out.set(`event ${event[1]}`, (out.get(`event ${event[1]}`) ?? '') + line)
    const service = /^### `ctx\.([^`]+)`/.exec(line)
    if (service) out.set(`service ctx.${service[1]}`, (out.get(`service ctx.${service[1]}`) ?? '') + line)
  }
  return out
}

function staleDetails(committed: string, generated: string): string[] {
  const before = entriesOf(committed)
  const after = entriesOf(generated)
  const added = [...after.keys()].filter((k) => !before.has(k))
  const removed = [...before.keys()].filter((k) => !after.has(k))
  const changed = [...after.keys()].filter((k) => before.has(k) && before.get(k) !== after.get(k))
  const out: string[] = []
  if (added.length) out.push(`  missing from the file: ${added.join(', ')}`)
  if (removed.length) out.push(`  no longer declared:    ${removed.join(', ')}`)
  if (changed.length) out.push(`  changed:               ${changed.join(', ')}`)
  if (out.length === 0) {
    const a = committed.split('\n')
    const b = generated.split('\n')
    let i = 0
    while (i < a.length && i < b.length && a[i] === b[i]) i++
    out.push(
      `  first difference at line ${i + 1}:`,
      `    committed: ${a[i] ?? '(end of file)'}`,
      `    generated: ${b[i] ?? '(end of file)'}`,
    )
  }
  return out
}

export interface Io {
  out: (line: string) => void
  err: (line: string) => void
}

const USAGE = 'usage: npm run catalog -- [--check] [--root <dir>]   (or: tsx scripts/gen-cordis-catalog.ts …)'

/** Runs the generator; returns the exit code (0 ok, 1 problems or stale, 2 bad usage). */
export function main(argv: string[], io: Io = { out: (l) => console.log(l), err: (l) => console.error(l) }): number {
  let check = false
  let root = REPO_ROOT
  let rootGiven = false
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]
    if (arg === '--check') check = true
    else if (arg === '--root' && argv[i + 1] !== undefined) {
      root = resolve(argv[++i])
      rootGiven = true
    } else if (arg.startsWith('--root=')) {
      root = resolve(arg.slice('--root='.length))
      rootGiven = true
    } else if (arg === '--help' || arg === '-h') {
      io.out(USAGE)
      return 0
    } else {
      io.err(`unknown argument ${arg}\n${USAGE}`)
      return 2
    }
  }
  const fix = rootGiven ? `npm run catalog -- --root ${root}` : 'npm run catalog'

  let catalog: Catalog
  try {
    catalog = scanCatalog(root)
  } catch (error) {
    io.err(`cordis catalog: ${(error as Error).message}`)
    return 2
  }
  if (catalog.problems.length) {
    for (const p of catalog.problems) io.err(p)
    io.err(
      `cordis catalog: ${catalog.problems.length} problem${catalog.problems.length === 1 ? '' : 's'} in cordis declarations; ${CATALOG_PATH} was not ${check ? 'checked' : 'written'}.`,
    )
    return 1
  }
  const generated = renderCatalog(catalog)
  const target = join(root, CATALOG_PATH)
  const summary = `${catalog.events.length} events, ${catalog.services.length} services, ${catalog.logEvents.length} session log event types from ${catalog.files} files`

  if (check) {
    if (!existsSync(target)) {
      io.err(`${CATALOG_PATH} is missing. Fix: run \`${fix}\` and commit ${CATALOG_PATH}.`)
      return 1
    }
    const committed = readFileSync(target, 'utf8').replace(/\r\n/g, '\n')
    if (committed !== generated) {
      io.err(`${CATALOG_PATH} is stale: it does not match the cordis declarations in packages/*/src.`)
      for (const line of staleDetails(committed, generated)) io.err(line)
      io.err(`Fix: run \`${fix}\` and commit ${CATALOG_PATH}.`)
      return 1
    }
    io.out(`${CATALOG_PATH} is up to date (${summary}).`)
    return 0
  }

  const previous = existsSync(target) ? readFileSync(target, 'utf8') : undefined
  if (previous === generated) {
    io.out(`${CATALOG_PATH} is already up to date (${summary}).`)
  } else {
    mkdirSync(dirname(target), { recursive: true })
    writeFileSync(target, generated)
    io.out(`wrote ${CATALOG_PATH} (${summary}).`)
  }
  return 0
}

function invokedDirectly(): boolean {
  const entry = process.argv[1]
  if (!entry) return false
  try {
    return pathToFileURL(realpathSync(entry)).href === pathToFileURL(realpathSync(fileURLToPath(import.meta.url))).href
  } catch {
    return false
  }
}

if (invokedDirectly()) process.exitCode = main(process.argv.slice(2))
