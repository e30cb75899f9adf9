import { Compile } from 'typebox/compile'
import type { TSchema } from 'typebox'

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
  let compiled: ReturnType<typeof Compile> | null | undefined
  return (value) => {
    if (compiled === undefined) {
      // A schema the compiler cannot read (an MCP server's, say) is left to the tool's own checks: the call goes
      // through rather than failing every time.
      try {
        compiled = Compile(schema)
      } catch {
        compiled = null
      }
    }
    if (compiled === null || compiled.Check(value)) return []
    const lines: string[] = []
    for (const error of compiled.Errors(value) as Iterable<RawError>) {
      const text = describe(error)
      if (text) for (const line of text.split('\n')) if (!lines.includes(line)) lines.push(line)
    }
    return lines.length ? lines : ['arguments: do not match the schema']
  }
}
