// --output-schema: the final answer of a print run must be JSON that a JSON Schema accepts. Loaded only when the flag
// is given (main.ts imports this module, and ajv, then and only then): a plain `keel -p` never compiles a validator.
// The model is told the schema in its prompt and the answer is validated here (no provider's native structured
// output yet); one corrective turn follows a mismatch (print.ts).
import { readFileSync } from 'node:fs'
import type { AnySchema, ErrorObject, ValidateFunction } from 'ajv'
import { UsageError } from './args.ts'

export interface OutputSchema {
  file: string
  schema: Record<string, unknown> | boolean
  /** What the prompt gains: the schema, and that the answer is that JSON and nothing else. */
  instruction: string
  /** The problems with `text` as an answer (empty when it validates), and the parsed value. */
  check(text: string): { value?: unknown; errors: string[] }
  /** The corrective prompt after an answer that did not validate. */
  correction(errors: readonly string[]): string
}

/** Reads and compiles the schema file; a file that is not JSON or not a JSON Schema is a usage error naming it. */
export async function loadOutputSchema(file: string): Promise<OutputSchema> {
  let text: string
  try {
    text = readFileSync(file, 'utf8')
  } catch (error) {
    throw new UsageError(
      `--output-schema ${file}: ${(error as NodeJS.ErrnoException).code === 'ENOENT' ? 'no such file' : (error as Error).message}`,
    )
  }
  let schema: unknown
  try {
    schema = JSON.parse(text)
  } catch (error) {
    throw new UsageError(`--output-schema ${file}: not JSON (${oneLine((error as Error).message)})`)
  }
  if (typeof schema !== 'boolean' && (!schema || typeof schema !== 'object' || Array.isArray(schema)))
    throw new UsageError(
      `--output-schema ${file}: not a JSON Schema (expected an object, got ${JSON.stringify(schema).slice(0, 40)})`,
    )
  const validate = await compile(schema as AnySchema, file)
  return {
    file,
    schema: schema as OutputSchema['schema'],
    instruction: instructionFor(schema),
    check(answer) {
      let value: unknown
      try {
        value = JSON.parse(unfenced(answer))
      } catch (error) {
        return { errors: [`the answer is not JSON (${oneLine((error as Error).message)})`] }
      }
      if (validate(value)) return { value, errors: [] }
      return { value, errors: (validate.errors ?? []).map(describeError) }
    },
    correction,
  }
}

/** Ajv for the draft the schema names (2020-12, 2019-09; draft-07 otherwise). */
async function compile(schema: AnySchema, file: string): Promise<ValidateFunction> {
  const draft = typeof schema === 'object' && typeof schema.$schema === 'string' ? schema.$schema : ''
  const load = draft.includes('2020-12')
    ? import('ajv/dist/2020.js')
    : draft.includes('2019-09')
      ? import('ajv/dist/2019.js')
      : import('ajv')
  const mod = (await load) as unknown as { default: AjvClass | { default: AjvClass } }
  const Ajv = 'default' in mod.default ? mod.default.default : mod.default
  // Unknown keywords are refused (a typo such as `requird` would otherwise check nothing); formats are not checked
  // (no format plugin is bundled), so `format` is accepted and ignored.
  const ajv = new Ajv({
    allErrors: true,
    strictSchema: true,
    strictTypes: false,
    strictTuples: false,
    validateFormats: false,
    logger: false,
  })
  try {
    return ajv.compile(schema)
  } catch (error) {
    throw new UsageError(`--output-schema ${file}: not a valid JSON Schema (${oneLine((error as Error).message)})`)
  }
}

type AjvClass = new (options: Record<string, unknown>) => { compile(schema: AnySchema): ValidateFunction }

function oneLine(text: string): string {
  return text.replace(/\s+/g, ' ').trim()
}

/** An answer that is one fenced block (```json … ```) is read as the block's content. */
function unfenced(answer: string): string {
  const trimmed = answer.trim()
  return /^```[a-z]*\n([\s\S]*?)\n?```$/i.exec(trimmed)?.[1] ?? trimmed
}

function describeError(error: ErrorObject): string {
  return `${error.instancePath || '(the answer)'} ${error.message ?? 'is invalid'}`
}

function instructionFor(schema: unknown): string {
  return [
    '',
    '',
    'When you are done, your final answer must be only a JSON value (no prose, no code fence) that validates against',
    'this JSON Schema:',
    JSON.stringify(schema, null, 2),
  ].join('\n')
}

function correction(errors: readonly string[]): string {
  return [
    'Your final answer did not validate against the JSON Schema you were given:',
    ...errors.map((error) => `- ${error}`),
    'Reply again with only the corrected JSON value, nothing else.',
  ].join('\n')
}
