import { request as httpRequest } from 'node:http'

/** A local server that does not answer its model list this fast is not waited for: the start goes on without it. */
const LOOKUP_TIMEOUT_MS = 1500
const LIST_LIMIT = 1024 * 1024

/**
 * The context length an OpenAI-compatible server reports for `model` in `GET <baseURL>/models`, when it reports one:
 * vLLM's `max_model_len` (https://docs.vllm.ai/en/latest/serving/openai_compatible_server.html), LM Studio's and
 * OpenRouter's `context_length` / `max_context_length`, llama.cpp's `meta.n_ctx_train`. Ollama's OpenAI-compatible
 * list has no length, so it falls through to the settings or the default. Any failure is undefined.
 */
export async function serverContextWindow(
  baseURL: string,
  model: string,
  apiKey: string | undefined,
  headers: Record<string, string> = {},
): Promise<number | undefined> {
  let target: URL
  try {
    target = new URL(`${baseURL.replace(/\/+$/, '')}/models`)
  } catch {
    return undefined
  }
  const send = target.protocol === 'https:' ? (await import('node:https')).request : httpRequest
  const text = await new Promise<string | undefined>((done) => {
    const req = send(
      target,
      {
        method: 'GET',
        headers: { ...headers, accept: 'application/json', ...(apiKey ? { authorization: `Bearer ${apiKey}` } : {}) },
      },
      (res) => {
        if ((res.statusCode ?? 0) !== 200) {
          res.resume()
          return done(undefined)
        }
        let body = ''
        res.setEncoding('utf8')
        res.on('data', (chunk: string) => {
          body += chunk
          if (body.length > LIST_LIMIT) req.destroy()
        })
        res.on('end', () => done(body))
        res.on('error', () => done(undefined))
      },
    )
    req.setTimeout(LOOKUP_TIMEOUT_MS, () => req.destroy())
    req.on('error', () => done(undefined))
    req.on('close', () => done(undefined))
    req.end()
  })
  if (!text) return undefined
  try {
    const list = (JSON.parse(text) as { data?: unknown }).data
    if (!Array.isArray(list)) return undefined
    const entry = list.find((item) => (item as { id?: unknown })?.id === model) as Record<string, unknown> | undefined
    if (!entry) return undefined
    const meta = (entry.meta ?? {}) as Record<string, unknown>
    for (const value of [entry.max_model_len, entry.context_length, entry.max_context_length, meta.n_ctx_train])
      if (typeof value === 'number' && Number.isInteger(value) && value > 0) return value
  } catch {
    // Not the JSON a model list is: no window from it.
  }
  return undefined
}
