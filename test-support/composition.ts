// A composition file for tests that run the real binary with `--config`.
import { writeFileSync } from 'node:fs'

/**
 * A small composition for end-to-end tests: the core plugins and the shell, plus `extra` YAML entries; written to
 * `path` and returned.
 */
export function writeComposition(path: string, extra: readonly string[]): string {
  writeFileSync(
    path,
    [
      "- { id: session, name: '@keel/session' }",
      "- { id: llm, name: '@keel/llm' }",
      "- { id: tools, name: '@keel/tools' }",
      "- { id: agent, name: '@keel/agent' }",
      "- { id: shell, name: '@keel/shell' }",
      ...extra,
    ].join('\n') + '\n',
  )
  return path
}
