import { homedir } from 'node:os'
import type { Context } from 'cordis'
import type {} from '@keel/compaction' // ctx.compaction
import { truncateToWidth, type Component } from '@mariozechner/pi-tui'
import { jobCountWords } from '@keel/door/words'
import { escapeLine, guardLine } from './safe.ts'
import { style } from './style.ts'

function formatTokens(n: number): string {
  if (n < 1000) return String(n)
  if (n < 1_000_000) return `${(n / 1000).toFixed(n < 100_000 ? 1 : 0)}k`
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

/**
 * `12.3k tok · 9% of 128k`: the session's tokens and the share of the context window the latest request filled (its
 * input plus its output, as the provider reported them). Without a known window, or before any usage, the tokens alone.
 */
export function usageText(tokens: FooterInfo['tokens'], contextWindow?: number): string {
  const used = `${formatTokens(tokens.input + tokens.output)} tok`
  if (!contextWindow || tokens.context === undefined) return used
  const share = Math.min(100, Math.round((tokens.context / contextWindow) * 100))
  return `${used} · ${share}% of ${formatTokens(contextWindow)}`
}

/** The window to measure against: the compaction config's when set (what compaction works to), else the model's. */
export function contextWindowOf(ctx: Context, model: { contextWindow?: number }): number | undefined {
  return ctx.get('compaction')?.config.contextWindow || model.contextWindow || undefined
}

export interface FooterInfo {
  model: string
  cwd: string
  sessionId: string
  /** Summed over the session; `context` is the latest reply's input plus output, as the provider reported them. */
  tokens: { input: number; output: number; context?: number }
  /** Tokens the model accepts in one request, when known: the footer then shows the share in use. */
  contextWindow?: number
  /** Dollars so far (`costText` of @keel/session/cost), once any request reported usage. */
  cost?: string
  /** Shown first, highlighted: the scripted demo says so on every frame. */
  label?: string
  /** The permission mode in force (Shift+Tab cycles it), when @keel/permissions is loaded. */
  mode?: string
  /** Background jobs running in the session (`/jobs` lists them). */
  jobs?: number
}

/** One line: model · tokens · session · mode · cwd (the path last, so a narrow terminal cuts it, not the numbers). */
export class Footer implements Component {
  info: FooterInfo

  constructor(info: FooterInfo) {
    this.info = info
  }

  invalidate(): void {}

  render(width: number): string[] {
    const { model, cwd, sessionId, tokens, label, contextWindow, cost, mode, jobs } = this.info
    const running = jobCountWords(jobs ?? 0)
    const parts = [
      escapeLine(shortModel(model)),
      usageText(tokens, contextWindow),
      ...(cost ? [cost] : []),
      // Eight characters: a unique prefix in practice, and what -r, /resume and sessions show accept.
      `session ${escapeLine(sessionId.slice(0, 8))}`,
      ...(mode ? [`${escapeLine(mode)} mode`] : []),
      ...(running ? [running] : []),
      escapeLine(shortPath(cwd)),
    ]
    const text =
      (label ? style.inverse(style.yellow(` ${escapeLine(label)} `)) + ' ' : '') + style.dim(parts.join(' · '))
    return [truncateToWidth(guardLine(text), Math.max(1, width), '…')]
  }
}
