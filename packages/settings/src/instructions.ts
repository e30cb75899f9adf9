import { readFileSync, statSync } from 'node:fs'
import { join, relative } from 'node:path'
import { keelHome } from '@keel/session/paths'
import { projectDirs } from './root.ts'

/** Total bytes of instruction text that go into the system prompt. */
export const INSTRUCTIONS_LIMIT = 32 * 1024

export interface InstructionFile {
  /** Absolute path. */
  path: string
  /** How the system prompt heads it: relative to the working directory (the user's own file: absolute). */
  label: string
  /** Size of the file in bytes. */
  bytes: number
  /** Bytes of this file left out by the 32 KiB cap (0 when it went in whole). */
  cut: number
}

export interface Instructions {
  /** The text for the system prompt ('' when there are no files). */
  text: string
  files: InstructionFile[]
}

function readText(path: string): string | undefined {
  try {
    if (!statSync(path).isFile()) return undefined
    return readFileSync(path, 'utf8')
  } catch {
    return undefined
  }
}

/**
 * The user's `$KEEL_HOME/AGENTS.md`, then one file per folder from the project root down to `cwd`: its AGENTS.md,
 * else its CLAUDE.md. Read once; the caller keeps the result for the whole session so the prompt stays byte-identical.
 */
export function loadInstructions(cwd: string, limit = INSTRUCTIONS_LIMIT): Instructions {
  const found: { path: string; label: string; content: string }[] = []
  const userFile = join(keelHome(), 'AGENTS.md')
  const user = readText(userFile)
  if (user !== undefined) found.push({ path: userFile, label: userFile, content: user })
  for (const dir of projectDirs(cwd)) {
    for (const name of ['AGENTS.md', 'CLAUDE.md']) {
      const path = join(dir, name)
      if (path === userFile) continue
      const content = readText(path)
      if (content === undefined) continue
      found.push({ path, label: relative(cwd, path) || name, content })
      break
    }
  }
  const parts: string[] = []
  const files: InstructionFile[] = []
  let budget = limit
  for (const file of found) {
    const bytes = Buffer.byteLength(file.content)
    const kept = bytes <= budget ? file.content : clip(file.content, budget)
    const keptBytes = Buffer.byteLength(kept)
    // Once one file is cut, the later ones are left out whole rather than as a few stray bytes.
    budget = keptBytes < bytes ? 0 : budget - keptBytes
    files.push({ path: file.path, label: file.label, bytes, cut: bytes - keptBytes })
    if (keptBytes) parts.push(`## ${file.label}\n\n${kept.trimEnd()}`)
  }
  const cut = files.filter((file) => file.cut)
  if (cut.length) {
    parts.push(
      `[Instructions were capped at ${limit / 1024} KiB: ${cut.map((file) => `${file.bytes === file.cut ? 'left out' : 'cut'} ${file.cut} of ${file.bytes} bytes of ${file.label}`).join('; ')}.]`,
    )
  }
  const text = parts.length
    ? `# Project instructions\n\nFollow these instructions from the user and the project.\n\n${parts.join('\n\n')}`
    : ''
  return { text, files }
}

/** The longest prefix of `text` within `bytes` UTF-8 bytes, never splitting a character. */
function clip(text: string, bytes: number): string {
  if (bytes <= 0) return ''
  const clipped = Buffer.from(text).subarray(0, bytes).toString('utf8')
  return clipped.endsWith('\uFFFD') && !text.startsWith(clipped) ? clipped.slice(0, -1) : clipped
}
