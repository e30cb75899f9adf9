// Reads a command's options by a declared list, as getopt would: every option must be on the list, so a command
// judged by it is judged by what it is known to accept, never by the options someone thought to forbid.

/** The options a command accepts. */
export interface OptionSpec {
  /** Short options that take no value (`'aAlh'`). */
  flags?: string
  /** Short options that take a value, glued (`-n5`) or the next word (`-n 5`). */
  values?: string
  /** Short options whose value is optional and only glued (`git status -u` or `-uno`). */
  optional?: string
  /**
   * Long options without the leading `--`: `name` takes no value, `name=` takes one (glued or the next word),
   * `name?` takes one only glued (`--color` or `--color=never`), `name==` two words (`--arg name value`).
   * Abbreviations are not accepted.
   */
  long?: readonly string[]
  /** `-5` is a count (head, tail, git log). */
  numeric?: boolean
  /** Options end at the first operand (POSIX order); otherwise, as GNU tools do, options may follow operands. */
  posix?: boolean
}

export interface ParsedOptions {
  /** Options as written in canonical form (`-n`, `--lines`), with their value when they take one. */
  options: { name: string; value?: string | null }[]
  operands: (string | null)[]
}

interface LongTable {
  flag: Set<string>
  value: Set<string>
  glued: Set<string>
  pair: Set<string>
}
const tables = new WeakMap<OptionSpec, LongTable>()
function longTable(spec: OptionSpec): LongTable {
  let table = tables.get(spec)
  if (!table) {
    table = { flag: new Set(), value: new Set(), glued: new Set(), pair: new Set() }
    for (const entry of spec.long ?? []) {
      if (entry.endsWith('==')) table.pair.add(entry.slice(0, -2))
      else if (entry.endsWith('=')) table.value.add(entry.slice(0, -1))
      else if (entry.endsWith('?')) {
        table.flag.add(entry.slice(0, -1))
        table.glued.add(entry.slice(0, -1))
      } else table.flag.add(entry)
    }
    tables.set(spec, table)
  }
  return table
}

/**
 * The options and operands of `args` by `spec`, or undefined when an option is not on the list, a value is missing,
 * or a word that could be an option is only known at run time (`$x`, a glob).
 */
export function parseOptions(args: readonly (string | null)[], spec: OptionSpec): ParsedOptions | undefined {
  const options: ParsedOptions['options'] = []
  const operands: (string | null)[] = []
  const table = longTable(spec)
  let i = 0
  for (; i < args.length; i++) {
    const word = args[i]
    if (word === null) {
      // An expansion may become an option; only after `--` or in POSIX order past the first operand is it an operand.
      if (spec.posix) break
      return undefined
    }
    if (word === '--') {
      i++
      break
    }
    if (word === '-' || !word.startsWith('-')) {
      if (spec.posix) break
      operands.push(word)
      continue
    }
    if (word.startsWith('--')) {
      const eq = word.indexOf('=')
      const name = eq < 0 ? word.slice(2) : word.slice(2, eq)
      if (eq >= 0) {
        if (!table.value.has(name) && !table.glued.has(name)) return undefined
        options.push({ name: `--${name}`, value: word.slice(eq + 1) })
      } else if (table.flag.has(name)) options.push({ name: `--${name}` })
      else if (table.pair.has(name)) {
        if (i + 2 >= args.length) return undefined
        options.push({ name: `--${name}`, value: args[i + 2] })
        i += 2
      } else if (table.value.has(name)) {
        if (i + 1 >= args.length) return undefined
        options.push({ name: `--${name}`, value: args[++i] })
      } else return undefined
      continue
    }
    if (spec.numeric && /^-\d+$/.test(word)) {
      options.push({ name: '-#', value: word.slice(1) })
      continue
    }
    // A cluster of short options: `-la`, `-n5`, `-A 3`.
    for (let j = 1; j < word.length; j++) {
      const letter = word[j]!
      if (spec.flags?.includes(letter)) {
        options.push({ name: `-${letter}` })
        continue
      }
      if (spec.optional?.includes(letter)) {
        options.push({ name: `-${letter}`, ...(j + 1 < word.length ? { value: word.slice(j + 1) } : {}) })
        break
      }
      if (!spec.values?.includes(letter)) return undefined
      if (j + 1 < word.length) options.push({ name: `-${letter}`, value: word.slice(j + 1) })
      else {
        if (i + 1 >= args.length) return undefined
        options.push({ name: `-${letter}`, value: args[++i] })
      }
      break
    }
  }
  operands.push(...args.slice(i))
  return { options, operands }
}

/** Whether `parsed` holds any of `names` (`-l`, `--list`). */
export function has(parsed: ParsedOptions, ...names: string[]): boolean {
  return parsed.options.some((o) => names.includes(o.name))
}
