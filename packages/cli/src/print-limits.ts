// The limits a headless run (`keel -p`) keeps: --max-turns, --timeout, --max-budget-usd and --fail-on-denial, each
// also the `print` key of a settings file. Read and checked in main() before any request leaves: a bad value is a
// usage error (exit 2) naming the flag, or the settings file and key.
import { UsageError, type Flags } from './args.ts'
import type { ResolvedSettings } from './settings.ts'

export interface PrintLimits {
  /** Model requests one turn of the main agent may make; a subagent's requests are counted apart. */
  maxTurns?: number
  /** Wall-clock milliseconds from the process's start. */
  timeoutMs?: number
  maxBudgetUsd?: number
  failOnDenial: boolean
}

/** The `print` settings key as written in a file (checked by its schema in settings.ts). */
interface PrintSettings {
  maxTurns?: number
  timeout?: string | number
  maxBudgetUsd?: number
  failOnDenial?: boolean
}

const UNITS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 }

/** `90`, `90s`, `1.5m`, `2h`, `500ms` (a bare number is seconds) → milliseconds; undefined when it does not parse. */
export function parseDuration(text: string): number | undefined {
  const match = /^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h)?\s*$/.exec(text)
  if (!match) return undefined
  return Number(match[1]) * UNITS[match[2] ?? 's']!
}

/** The run's limits: a flag over the settings' `print` key. Throws a UsageError naming where a bad value came from. */
export function printLimits(flags: Flags, settings: ResolvedSettings | undefined): PrintLimits {
  const saved = (settings?.merged.values.print ?? {}) as PrintSettings
  const where = (flag: string, key: keyof PrintSettings) =>
    flags[flag as keyof Flags] !== undefined
      ? `--${flag}`
      : `${settings?.merged.sources[`print.${key}`] ?? 'settings'}: print.${key}`

  const maxTurnsText = flags['max-turns'] ?? saved.maxTurns?.toString()
  let maxTurns: number | undefined
  if (maxTurnsText !== undefined) {
    maxTurns = /^\s*\d+\s*$/.test(maxTurnsText) ? Number(maxTurnsText) : Number.NaN
    if (!(maxTurns >= 1))
      throw new UsageError(
        `${where('max-turns', 'maxTurns')}: expected a whole number of model requests, at least 1, not ${JSON.stringify(maxTurnsText)}`,
      )
  }

  const timeoutText = flags.timeout ?? saved.timeout?.toString()
  let timeoutMs: number | undefined
  if (timeoutText !== undefined) {
    timeoutMs = parseDuration(timeoutText)
    if (timeoutMs === undefined || timeoutMs <= 0 || !Number.isFinite(timeoutMs))
      throw new UsageError(
        `${where('timeout', 'timeout')}: expected a duration above 0 such as 90s, 10m or 1h, not ${JSON.stringify(timeoutText)}`,
      )
  }

  const budgetText = flags['max-budget-usd'] ?? saved.maxBudgetUsd?.toString()
  let maxBudgetUsd: number | undefined
  if (budgetText !== undefined) {
    maxBudgetUsd = /^\s*\d+(\.\d+)?\s*$/.test(budgetText) ? Number(budgetText) : Number.NaN
    if (!(maxBudgetUsd > 0))
      throw new UsageError(
        `${where('max-budget-usd', 'maxBudgetUsd')}: expected an amount of US dollars above 0 such as 0.50, not ${JSON.stringify(budgetText)}`,
      )
  }

  return {
    ...(maxTurns !== undefined ? { maxTurns } : {}),
    ...(timeoutMs !== undefined ? { timeoutMs } : {}),
    ...(maxBudgetUsd !== undefined ? { maxBudgetUsd } : {}),
    failOnDenial: flags['fail-on-denial'] ?? saved.failOnDenial ?? false,
  }
}
