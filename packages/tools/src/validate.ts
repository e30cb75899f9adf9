import type { TSchema } from 'typebox'
// `typebox/schema` is the JSON Schema engine that `typebox/compile`'s Validator wraps: its Check is
// `Build(schema).Evaluate().Check` and its Errors is `Errors(schema, value)`, exactly what is used here. The Validator
// also imports TypeBox's whole Value module (Clean, Convert, Decode, Parse...) that Keel never calls: 356 KB to load
// against 168 KB, before the first model request.
import { Build, Errors } from 'typebox/schema'

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

/**
 * Compiles a schema on first use (compiling generates code, and most tools of a short session are never called);
 * the validator returns one path-qualified line per violation (empty when valid).
 */
export function compileValidator(schema: TSchema): Validator {
  let check: ((value: unknown) => boolean) | null | undefined
  return (value) => {
    if (check === undefined) {
      // A schema the compiler cannot read (an MCP server's, say) is left to the tool's own checks: the call goes
      // through rather than failing every time.
      try {
        const evaluated = Build(schema).Evaluate()
        check = (candidate) => evaluated.Check(candidate)
      } catch {
        check = null
      }
    }
    if (check === null || check(value)) return []
    const lines: string[] = []
    const [, errors] = Errors(schema, value)
    for (const error of errors) {
      const text = describe(error)
      if (text) for (const line of text.split('\n')) if (!lines.includes(line)) lines.push(line)
    }
    return lines.length ? lines : ['arguments: do not match the schema']
  }
}
