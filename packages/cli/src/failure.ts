// How a command that failed ends: one line on stderr and an exit code. Loaded only when something failed.
import { RewindError } from '@keel/checkpoint'
import { LlmError } from '@keel/llm'
import {
  escapeLine,
  SessionFileError,
  SessionLockedError,
  SessionNotFoundError,
  SessionWriteError,
} from '@keel/session'
import { SettingsError } from '@keel/settings'
import { SchemaError, SessionStoreError } from '@keel/store-pg'
import { UsageError } from './args.ts'
import { BootError } from './boot.ts'
import { missingKeyHelp } from './first-run.ts'

/**
 * The command was right, the data or the disk was not: a session file, a lock, the disk, the session store, or a rewind refused
 * (conflicts, no checkpoints). Exit 1, not the usage code 2.
 */
const dataErrors = [
  SessionFileError,
  SessionLockedError,
  SessionNotFoundError,
  SessionWriteError,
  SessionStoreError,
  SchemaError,
  RewindError,
]

/** What went wrong on stderr, one line (a list of choices may follow), never a stack (KEEL_DEBUG=1 shows it). */
export function fail(error: unknown): number {
  const known =
    error instanceof UsageError ||
    error instanceof BootError ||
    error instanceof LlmError ||
    error instanceof SettingsError
  const message = missingKeyHelp(error) ?? (error instanceof Error ? error.message : String(error))
  process.stderr.write(
    message
      .split('\n')
      .map((line) => `keel: ${escapeLine(line)}\n`)
      .join(''),
  )
  if (process.env.KEEL_DEBUG && error instanceof Error) process.stderr.write(`${error.stack}\n`)
  if (dataErrors.some((type) => error instanceof type)) return 1
  return known || error instanceof Error ? 2 : 1
}
