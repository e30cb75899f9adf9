import { LlmError } from '@keel/llm'

/** The real providers and the variable each needs; kept beside the message that lists them. */
const PROVIDERS = [
  ['deepseek', 'DEEPSEEK_API_KEY'],
  ['openai', 'OPENAI_API_KEY'],
  ['anthropic', 'ANTHROPIC_API_KEY'],
  ['openrouter', 'OPENROUTER_API_KEY'],
  ['openai-compatible', '--base-url <url>; KEEL_API_KEY if the server wants one'],
] as const

/**
 * A missing API key on a first run: which variable the chosen provider needs, the other providers, and how to try
 * Keel without any key. Undefined for any other error.
 */
export function missingKeyHelp(error: unknown): string | undefined {
  if (
    !(error instanceof LlmError) ||
    error.kind !== 'config' ||
    !/ is not set \(needed for --model /.test(error.message)
  )
    return undefined
  return [
    error.message,
    `Set it in the environment (API keys never go in settings files), or choose another provider with --model <provider>/<model>:`,
    ...PROVIDERS.map(([name, needs]) => `  ${name.padEnd(18)} ${needs}`),
    'To try Keel without a key: keel --model scripted/demo',
  ].join('\n')
}
