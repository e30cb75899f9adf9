/** Whether a store setting names a PostgreSQL database (`postgres://…` or `postgresql://…`). */
export function isPostgresUrl(value: string): boolean {
  return /^postgres(ql)?:\/\//i.test(value.trim())
}

/**
 * The connection string as it may be printed: without its password (`postgres://user:***@host/db`), and without a
 * `password=` query parameter. A string that does not parse as a URL is not shown at all.
 */
export function redactUrl(value: string): string {
  let url: URL
  try {
    url = new URL(value.trim())
  } catch {
    return 'postgres://(a connection string that is not a valid URL)'
  }
  if (url.password) url.password = '***'
  for (const key of [...url.searchParams.keys()]) if (/pass|secret|key/i.test(key)) url.searchParams.set(key, '***')
  return url.toString()
}

/** Removes every occurrence of the URL's password from a message the driver wrote. */
export function scrub(message: string, value: string): string {
  let password = ''
  try {
    password = decodeURIComponent(new URL(value.trim()).password)
  } catch {}
  let out = message.split(value).join(redactUrl(value))
  if (password) out = out.split(password).join('***')
  return out
}
