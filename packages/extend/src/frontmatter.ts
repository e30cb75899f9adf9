/**
 * The frontmatter claude-code's command, skill and agent files use: `---`, one `key: value` per line, `---`, then
 * the body. Values are plain or quoted strings (a YAML subset: no nesting, which none of these formats needs).
 * Throws with the line number on a line that is not `key: value` or a block that is never closed.
 */
export interface Frontmatter {
  fields: Record<string, string>
  body: string
}

export function parseFrontmatter(text: string): Frontmatter {
  const source = text.replace(/^\uFEFF/, '')
  const lines = source.split(/\r?\n/)
  if (lines[0]?.trim() !== '---') return { fields: {}, body: source }
  const fields: Record<string, string> = {}
  for (let i = 1; i < lines.length; i++) {
    const line = lines[i]!
    if (line.trim() === '---') return { fields, body: lines.slice(i + 1).join('\n') }
    if (!line.trim() || line.trimStart().startsWith('#')) continue
    const match = /^([A-Za-z][\w-]*)\s*:\s*(.*)$/.exec(line)
    if (!match) throw new Error(`line ${i + 1}: not a "key: value" line`)
    const value = match[2]!.trim()
    // A YAML list (`tools:` then `  - Read` lines) is read as the comma list the one-line form writes.
    if (!value) {
      const items: string[] = []
      while (/^\s+-\s+/.test(lines[i + 1] ?? '')) items.push(unquote(lines[++i]!.replace(/^\s+-\s+/, '').trim(), i + 1))
      fields[match[1]!] = items.join(', ')
      continue
    }
    fields[match[1]!] = unquote(value, i + 1)
  }
  throw new Error('line 1: the frontmatter block is never closed with ---')
}

function unquote(value: string, line: number): string {
  const quote = value[0]
  if (quote !== '"' && quote !== "'") return value
  if (value.length < 2 || value[value.length - 1] !== quote) throw new Error(`line ${line}: an unclosed quote`)
  const inner = value.slice(1, -1)
  return quote === '"' ? inner.replace(/\\(["\\n])/g, (_, c) => (c === 'n' ? '\n' : c)) : inner.replace(/''/g, "'")
}
