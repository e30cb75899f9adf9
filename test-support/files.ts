// What tests read back from disk: a working tree's files, and the events of the one session a run left.
import { readdirSync, readFileSync, statSync } from 'node:fs'
import { join, relative } from 'node:path'

/** Every file under `dir` with its content, keyed by relative path; directories named in `skip` are left out. */
export function fileTree(dir: string, skip: readonly string[] = []): Record<string, string> {
  const out: Record<string, string> = {}
  const walk = (at: string) => {
    for (const name of readdirSync(at)) {
      const path = join(at, name)
      if (skip.includes(relative(dir, path))) continue
      if (statSync(path).isDirectory()) walk(path)
      else out[relative(dir, path)] = readFileSync(path, 'utf8')
    }
  }
  walk(dir)
  return out
}

/** The events (header left out) of the first session log found under `$KEEL_HOME/sessions`. */
export function onlySessionEvents(home: string): { type: string; data: Record<string, unknown> }[] {
  const dir = join(home, 'sessions')
  for (const slug of readdirSync(dir)) {
    const file = readdirSync(join(dir, slug)).find((name) => name.endsWith('.jsonl'))
    if (file)
      return readFileSync(join(dir, slug, file), 'utf8')
        .split('\n')
        .filter(Boolean)
        .slice(1)
        .map((line) => JSON.parse(line))
  }
  return []
}
