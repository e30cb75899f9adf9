// Which session store a command uses: `--store`, else $KEEL_STORE, else the settings' `store` (the person's own
// file, or a trusted project's), else the JSONL files under $KEEL_HOME. Commands that resolve no settings (sessions
// list/show/…) read the files here, through the same trust gate.
import { gateSettings, readSettingsFiles, SettingsError, trustState } from '@keel/settings'
import { DEFAULT_MODEL, type Flags, UsageError } from './args.ts'
import type { ResolvedSettings } from './settings.ts'

const POSTGRES = /^postgres(ql)?:\/\//i

export function resolveStore(flags: Flags, settings: ResolvedSettings | undefined, cwd: string): string | undefined {
  const flag = flags.store?.trim()
  if (flag !== undefined) {
    if (!POSTGRES.test(flag)) throw new UsageError('--store must be a postgres:// connection string')
    return flag
  }
  const env = process.env.KEEL_STORE?.trim()
  if (env) {
    if (!POSTGRES.test(env)) throw new UsageError('KEEL_STORE must be a postgres:// connection string')
    return env
  }
  if (settings) return settings.store
  const { files } = gateSettings(readSettingsFiles(cwd), trustState(cwd), DEFAULT_MODEL)
  let store: string | undefined
  for (const file of files) {
    const value = file.data.store
    if (value === undefined) continue
    if (typeof value !== 'string' || !POSTGRES.test(value))
      throw new SettingsError(`${file.path}: store must be a postgres:// connection string`)
    store = value
  }
  return store
}
