// One pass that validates a value as plain JSON and returns a deep-frozen copy, so a logged event can never be
// changed through the caller's object and always round-trips through JSON.stringify/parse unchanged.

export class JsonValueError extends Error {
  constructor(path: string, what: string) {
    super(`not JSON at ${path}: ${what}`)
    this.name = 'JsonValueError'
  }
}

export function frozenJsonCopy<T>(value: T, path = 'data'): T {
  return copy(value, path, new Set()) as T
}

function copy(value: unknown, path: string, seen: Set<object>): unknown {
  switch (typeof value) {
    case 'string':
    case 'boolean':
      return value
    case 'number':
      if (!Number.isFinite(value)) throw new JsonValueError(path, `${value} is not a finite number`)
      return Object.is(value, -0) ? 0 : value
    case 'undefined':
      throw new JsonValueError(path, 'undefined (omit the key instead)')
    case 'function':
      throw new JsonValueError(path, 'a function')
    case 'bigint':
      throw new JsonValueError(path, 'a bigint')
    case 'symbol':
      throw new JsonValueError(path, 'a symbol')
  }
  if (value === null) return null
  const object = value as object
  if (seen.has(object)) throw new JsonValueError(path, 'a cycle')
  seen.add(object)
  let out: unknown
  if (Array.isArray(object)) {
    const items: unknown[] = new Array(object.length)
    for (let i = 0; i < object.length; i++) {
      if (!(i in object)) throw new JsonValueError(`${path}[${i}]`, 'a hole in a sparse array')
      items[i] = copy(object[i], `${path}[${i}]`, seen)
    }
    out = Object.freeze(items)
  } else {
    const proto = Object.getPrototypeOf(object)
    if (proto !== Object.prototype && proto !== null) {
      throw new JsonValueError(path, `an instance of ${proto?.constructor?.name ?? 'a class'}`)
    }
    const result: Record<string, unknown> = {}
    for (const key of Object.keys(object)) {
      const item = copy((object as Record<string, unknown>)[key], `${path}.${key}`, seen)
      // An own `__proto__` key (JSON.parse makes those) must stay data; plain assignment would set the prototype.
      if (key === '__proto__')
        Object.defineProperty(result, key, { value: item, enumerable: true, writable: true, configurable: true })
      else result[key] = item
    }
    out = Object.freeze(result)
  }
  seen.delete(object)
  return out
}

/**
 * Deep-freezes a value in place. Only for values fresh from `JSON.parse` that nobody else holds (a loaded log): they
 * are JSON-clean by construction, so the copy `frozenJsonCopy` makes would buy nothing.
 */
export function deepFreezeParsed<T>(value: T): T {
  if (value !== null && typeof value === 'object' && !Object.isFrozen(value)) {
    if (Array.isArray(value)) for (const item of value) deepFreezeParsed(item)
    else for (const key in value) deepFreezeParsed((value as Record<string, unknown>)[key])
    Object.freeze(value)
  }
  return value
}
