import type { TSchema } from 'typebox'
// `typebox/schema` is the JSON Schema engine that `typebox/compile`'s Validator wraps: its Check is
// `Build(schema).Evaluate().Check` and its Errors is `Errors(schema, value)`, exactly what is used here. The Validator
// also imports TypeBox's whole Value module (Clean, Convert, Decode, Parse...) that Keel never calls: 356 KB to load
// against 168 KB, before the first model request.
import { Build, Check, Errors } from 'typebox/schema'
import { Settings } from 'typebox/system'

interface RawError {
  keyword: string
  instancePath: string
  message: string
  params: Record<string, unknown>
}

/** `/todos/0/status` → `todos[0].status`; the root is `arguments`. */
export function pathOf(pointer: string, extra?: string): string {
  const parts = pointer
    .split('/')
    .slice(1)
    .map((part) => part.replace(/~1/g, '/').replace(/~0/g, '~'))
  if (extra !== undefined) parts.push(extra)
  let out = ''
  for (const part of parts) out += /^\d+$/.test(part) ? `[${part}]` : out ? `.${part}` : part
  return out || 'arguments'
}

function describe(error: RawError): string | undefined {
  switch (error.keyword) {
    case 'boolean':
      return undefined // reported again, better, by additionalProperties
    case 'required':
      return (error.params.requiredProperties as string[])
        .map((name) => `${pathOf(error.instancePath, name)}: is required`)
        .join('\n')
    case 'additionalProperties':
      return (error.params.additionalProperties as string[])
        .map((name) => `${pathOf(error.instancePath, name)}: is not an allowed property`)
        .join('\n')
    case 'enum':
      return `${pathOf(error.instancePath)}: must be one of ${(error.params.allowedValues as unknown[]).join('|')}`
    case 'type':
      return `${pathOf(error.instancePath)}: must be ${error.params.type === 'integer' ? 'an integer' : `a${/^[aeiou]/.test(String(error.params.type)) ? 'n' : ''} ${error.params.type}`}`
    default:
      return `${pathOf(error.instancePath)}: ${error.message}`
  }
}

export type Validator = (value: unknown) => string[]

/** TypeBox stops at 8 errors by default (half of them `boolean` noise); a model fixes a list in one retry only if it
 * sees every problem, so collect up to this many and count the rest. */
const MAX_COLLECTED = 500
/** Lines shown after grouping; the rest are counted ("and 6 more"). */
const MAX_SHOWN = 12

/**
 * One line per problem, the same problem of many array items folded into one (`todos[0..9].activeForm: is not an
 * allowed property (10 items)`), at most MAX_SHOWN lines and a count of the rest.
 */
export function summarize(lines: readonly string[]): string[] {
  const groups = new Map<string, number[]>()
  const loose: string[] = []
  for (const line of lines) {
    const match = /\[(\d+)\]/.exec(line)
    if (!match) {
      loose.push(line)
      continue
    }
    const key = `${line.slice(0, match.index)}\u0000${line.slice(match.index + match[0].length)}`
    const indexes = groups.get(key) ?? []
    indexes.push(Number(match[1]))
    groups.set(key, indexes)
  }
  const out = [...loose]
  for (const [key, indexes] of groups) {
    const [head, tail] = key.split('\u0000') as [string, string]
    if (indexes.length === 1) out.push(`${head}[${indexes[0]}]${tail}`)
    else {
      const contiguous = indexes.every((index, i) => i === 0 || index === indexes[i - 1]! + 1)
      const span = contiguous ? `${indexes[0]}..${indexes.at(-1)}` : indexes.join(',')
      out.push(`${head}[${span}]${tail} (${indexes.length} items)`)
    }
  }
  if (out.length <= MAX_SHOWN) return out
  return [...out.slice(0, MAX_SHOWN - 1), `… and ${out.length - (MAX_SHOWN - 1)} more`]
}

function allErrors(schema: TSchema, value: unknown) {
  const { maxErrors } = Settings.Get()
  Settings.Set({ maxErrors: MAX_COLLECTED })
  try {
    return Errors(schema, value)[1]
  } finally {
    Settings.Set({ maxErrors })
  }
}

/** Calls a schema is checked by the interpreter before it is compiled (see compileValidator). */
const INTERPRETED_CALLS = 2

/**
 * A schema's validator, which returns one path-qualified line per violation (empty when valid). Compiling generates
 * and evaluates code (2–6 ms for todo_write's schema), more than the engine's interpreter takes to check a call
 * (well under a millisecond), and most tools of a short session are called a few times or never: the first calls are
 * interpreted and a tool called more often is compiled then.
 */
export function compileValidator(schema: TSchema): Validator {
  let check: ((value: unknown) => boolean) | null | undefined
  let calls = 0
  return (value) => {
    calls++
    // A schema the engine cannot read (an MCP server's, say) is left to the tool's own checks: the call goes through
    // rather than failing every time.
    if (check === undefined)
      try {
        Check(schema, value)
        check = (candidate) => Check(schema, candidate)
      } catch {
        check = null
      }
    if (check && calls === INTERPRETED_CALLS + 1)
      try {
        const evaluated = Build(schema).Evaluate()
        check = (candidate) => evaluated.Check(candidate)
      } catch {
        // the interpreter read it: keep it
      }
    if (check === null || check(value)) return []
    const lines: string[] = []
    for (const error of allErrors(schema, value)) {
      const text = describe(error)
      if (text) for (const line of text.split('\n')) if (!lines.includes(line)) lines.push(line)
    }
    return lines.length ? summarize(lines) : ['arguments: do not match the schema']
  }
}
