// The cordis Loader as Keel uses it for a composition file given with --config. The default composition boots
// without it (boot.ts), so this module and its YAML parser load only when a file is named.
import { dirname, isAbsolute, resolve } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { Loader } from '@cordisjs/loader'
import { withStore } from './store-entry.ts'
import { BUILTIN_PLUGINS } from './plugins.ts'

/**
 * The cordis Loader, adapted: plugin names resolve to Keel's built-ins first, then relative to the composition
 * file (not to the loader package), settings replace entry configs in memory, and the file is never written back.
 */
export class KeelLoader extends Loader {
  async refresh(): Promise<void> {
    // Entry id → the config it loads with instead of the file's (from settings files), passed in boot's plugin config.
    const { overrides = {}, store } = this.config as {
      overrides?: Record<string, Record<string, unknown>>
      store?: string
    }
    const entries = await this.file.read()
    this.root.update(
      entries.map((entry) => withStore(overrides[entry.id] ? { ...entry, config: overrides[entry.id] } : entry, store)),
    )
  }

  async import(name: string): Promise<unknown> {
    const builtin = BUILTIN_PLUGINS[name]
    if (builtin) return builtin()
    if (name.startsWith('.') || isAbsolute(name)) {
      return import(pathToFileURL(resolve(dirname(fileURLToPath(this.url)), name)).href)
    }
    return import(name)
  }

  write(): void {
    // Deliberately empty: the Loader would persist entry changes into the user's file.
  }
}
