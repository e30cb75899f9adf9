import { homedir } from 'node:os'
import { truncateToWidth, type Component } from '@mariozechner/pi-tui'
import { escapeLine, guardLine } from './safe.ts'
import { style } from './style.ts'

function formatTokens(n: number): string {
  if (n < 1000) return String(n)
  if (n < 1_000_000) return `${(n / 1000).toFixed(n < 10_000 ? 1 : 0)}k`
  return `${(n / 1_000_000).toFixed(1)}M`
}

function shortPath(path: string, home = homedir()): string {
  return home && (path === home || path.startsWith(home + '/')) ? '~' + path.slice(home.length) : path
}

/** `scripted//abs/path/to/script.json` → `scripted/script.json`: a path is noise in a status line. */
function shortModel(spec: string): string {
  const slash = spec.indexOf('/')
  const model = spec.slice(slash + 1)
  return model.includes('/') ? `${spec.slice(0, slash)}/${model.slice(model.lastIndexOf('/') + 1)}` : spec
}

export interface FooterInfo {
  model: string
  cwd: string
  sessionId: string
  tokens: { input: number; output: number }
  /** Shown first, highlighted: the scripted demo says so on every frame. */
  label?: string
}

/** One line: model · tokens · session · cwd (the path last, so a narrow terminal cuts it, not the numbers). */
export class Footer implements Component {
  info: FooterInfo

  constructor(info: FooterInfo) {
    this.info = info
  }

  invalidate(): void {}

  render(width: number): string[] {
    const { model, cwd, sessionId, tokens, label } = this.info
    const total = tokens.input + tokens.output
    const parts = [
      escapeLine(shortModel(model)),
      `${formatTokens(total)} tokens (${formatTokens(tokens.input)} in · ${formatTokens(tokens.output)} out)`,
      // Eight characters: a unique prefix in practice, and what -r, /resume and sessions show accept.
      `session ${escapeLine(sessionId.slice(0, 8))}`,
      escapeLine(shortPath(cwd)),
    ]
    const text =
      (label ? style.inverse(style.yellow(` ${escapeLine(label)} `)) + ' ' : '') + style.dim(parts.join(' · '))
    return [truncateToWidth(guardLine(text), Math.max(1, width), '…')]
  }
}
