// The composition's session entry for the store a run uses; apart from boot.ts so the loader can share it
// without importing the boot (a file cycle).

/** The session entry as the store asks: @keel/store-pg in place of @keel/session when a database is named. */
export function withStore<T extends { id?: string; name: string; config?: unknown }>(entry: T, store?: string): T {
  return store && entry.name === '@keel/session' ? { ...entry, name: '@keel/store-pg', config: { url: store } } : entry
}
