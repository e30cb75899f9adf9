import { CURRENT_MODELS } from '@keel/llm/providers'
import { escapeLine } from './safe.ts'

export type ModelArg = { kind: 'list' } | { kind: 'switch'; spec: string } | { kind: 'invalid'; message: string }

/** `/model` → list; `/model provider/model` → switch; anything else → a one-line reason. */
export function parseModelArg(arg: string, providers: readonly string[]): ModelArg {
  const spec = arg.trim()
  if (!spec) return { kind: 'list' }
  const slash = spec.indexOf('/')
  if (/\s/.test(spec) || slash <= 0 || slash === spec.length - 1)
    return {
      kind: 'invalid',
      message: `Usage: /model <provider>/<model>, for example /model deepseek/${CURRENT_MODELS.deepseek![0]} (got ${escapeLine(spec).slice(0, 60)}); /model alone lists the providers.`,
    }
  const provider = spec.slice(0, slash)
  if (!providers.includes(provider))
    return {
      kind: 'invalid',
      message: `Unknown provider ${escapeLine(provider).slice(0, 40)}; known: ${providers.join(', ')}.`,
    }
  return { kind: 'switch', spec }
}

/**
 * What `/model` alone shows: the providers with their current ids (any other id of theirs works too), the model in
 * use and the one the flags or settings configured.
 */
export function modelList(providers: readonly string[], current: string, configured: string): string {
  const provider = (spec: string) => spec.slice(0, spec.indexOf('/'))
  const lines = [
    `Model: ${escapeLine(current)}${current === configured ? '' : ` (configured: ${escapeLine(configured)})`}`,
    'Providers:',
    ...providers.map((name) => {
      const chosen = [current, configured]
        .filter((spec) => provider(spec) === name)
        .map((spec) => spec.slice(name.length + 1))
      const models = [...new Set([...chosen, ...(CURRENT_MODELS[name] ?? [])])]
      return `  ${name}${models.length ? `  ${models.map((model) => escapeLine(model)).join(', ')}` : ''}`
    }),
    '/model <provider>/<model> switches for the following turns (recorded in the session; keel -c keeps it).',
  ]
  return lines.join('\n')
}

/** The footer's highlighted label for a scripted model, so nobody mistakes a demo for a model answering. */
export function scriptedLabel(modelSpec: string): { label: string; intro: string } | undefined {
  if (!modelSpec.startsWith('scripted/')) return undefined
  const name = modelSpec.slice('scripted/'.length)
  if (name === 'demo') {
    return {
      label: 'SCRIPTED DEMO',
      intro:
        'Scripted demo: the replies come from packages/llm/scripts/demo.json and no model is called.\nThe bash commands it shows really run, read-only, in this directory. Run `keel` with a real model to work for real.',
    }
  }
  return { label: 'SCRIPTED MODEL', intro: `Scripted model: replies come from the script ${name}; no model is called.` }
}
