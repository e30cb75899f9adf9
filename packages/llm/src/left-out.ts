// What an adapter tells the person, once, about the history it sends: reasoning it could not send back. Each wire
// format's converter decides what it leaves out (anthropic.ts, responses.ts, openai.ts); the words are here.

/** A one-line notice for the person under `key`: the llm plugin says each key once (a `keel/notice`). */
export type Tell = (key: string, text: string) => void

/** Says once that `provider/model` is sent earlier reasoning without what it cannot take back. */
export function tellLeftOut(tell: Tell | undefined, provider: string, model: string, count: number): void {
  if (!tell || !count) return
  tell(
    `left-out:${provider}/${model}`,
    `${provider}/${model}: earlier reasoning it cannot take back (from an older Keel, or from another provider before a /model switch) is left out of its requests; the replies and tool calls are sent as they were`,
  )
}
