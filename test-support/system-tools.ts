// The system tools the end-to-end tiers drive (tmux, Chromium, bubblewrap) and what a test does without one. Under
// CI=true the gate has installed them, so a missing tool is a broken gate: the test runs and fails, naming the tool.
// Elsewhere the test is skipped, with one stderr line saying why. `.ci/run` also fails when any test in a file that
// imports this module was skipped, so a skip cannot hide in a green gate.
import { spawnSync } from 'node:child_process'
import { accessSync, constants } from 'node:fs'
import { delimiter, join } from 'node:path'

export const IN_CI = process.env.CI === 'true'

/** Browser names looked up on PATH, in this order, when KEEL_CHROMIUM is not set. */
const CHROMIUM_NAMES = ['chromium', 'chromium-browser', 'google-chrome', 'google-chrome-stable'] as const

/** The first of `names` that is an executable file on PATH. */
function findOnPath(names: readonly string[]): string | undefined {
  for (const name of names) {
    for (const dir of (process.env.PATH ?? '').split(delimiter)) {
      if (!dir) continue
      const candidate = join(dir, name)
      try {
        accessSync(candidate, constants.X_OK)
        return candidate
      } catch {}
    }
  }
  return undefined
}

/** The Chromium to launch: `KEEL_CHROMIUM` (the gate exports the one it found), else the first browser on PATH. */
export const CHROMIUM: string | undefined = process.env.KEEL_CHROMIUM || findOnPath(CHROMIUM_NAMES)

/** Chromium's path, or an error that says how to provide it (for a test that runs although it is missing: CI). */
export function requireChromium(): string {
  if (CHROMIUM) return CHROMIUM
  throw new Error(
    `Chromium not found: none of ${CHROMIUM_NAMES.join(', ')} is on PATH and KEEL_CHROMIUM is not set (apt-get install chromium)`,
  )
}

/** Whether `command` runs (`command --version`-style probe). */
function runs(command: string, args: readonly string[]): boolean {
  const result = spawnSync(command, args, { stdio: 'ignore' })
  return !result.error && result.status === 0
}

export const HAS_BWRAP = runs('bwrap', ['--version'])

/**
 * True when tests needing `tool` should be skipped: it is missing and this is not CI. Says so once on stderr. Under
 * CI=true it is false even when the tool is missing, so the test runs and fails.
 */
export function skipWithout(tool: string, available: boolean, what: string): boolean {
  if (available || IN_CI) return false
  process.stderr.write(
    `skipping ${what}: ${tool} is not installed (.ci/run installs it; under CI=true these tests fail instead)\n`,
  )
  return true
}
