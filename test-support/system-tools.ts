// The system tools the end-to-end tiers drive (tmux, Chromium, bubblewrap) and what a test does without one. Under
// CI=true the gate has installed them, so a missing tool is a broken gate: the test runs and fails, naming the tool.
// Elsewhere the test is skipped, and the run ends with one line naming what to install (global-setup.ts's teardown,
// from `missingTools`). `.ci/run` also fails when any test in a file that
// imports this module was skipped, so a skip cannot hide in a green gate.
import { spawnSync } from 'node:child_process'
import { accessSync, constants } from 'node:fs'
import { delimiter, join } from 'node:path'
import { HAS_POSTGRES } from './postgres.ts'

/** `npm run test:unit`: the system tools count as absent, so no test here drives one (not even under CI=true). */
const UNIT_TIER = process.env.KEEL_TESTS === 'unit'

export const IN_CI = process.env.CI === 'true' && !UNIT_TIER

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
export const CHROMIUM: string | undefined = UNIT_TIER
  ? undefined
  : process.env.KEEL_CHROMIUM || findOnPath(CHROMIUM_NAMES)

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

export const HAS_BWRAP = !UNIT_TIER && runs('bwrap', ['--version'])

/**
 * True when tests needing `tool` should be skipped: it is missing and this is not CI. Under CI=true it is false even
 * when the tool is missing, so the test runs and fails. (`tool` and `what` name the skip for a reader of the test;
 * the run's one summary line says what to install.)
 */
export function skipWithout(_tool: string, available: boolean, _what: string): boolean {
  return !available && !IN_CI
}

/** The Debian packages of the system tools the end-to-end tiers drive, and the command each one provides. */
const TOOLS: readonly { pkg: string; found: () => boolean }[] = [
  { pkg: 'tmux', found: () => findOnPath(['tmux']) !== undefined },
  { pkg: 'chromium', found: () => CHROMIUM !== undefined },
  { pkg: 'bubblewrap', found: () => findOnPath(['bwrap']) !== undefined },
  { pkg: 'socat', found: () => findOnPath(['socat']) !== undefined },
  { pkg: 'ripgrep', found: () => findOnPath(['rg']) !== undefined },
  { pkg: 'postgresql', found: () => HAS_POSTGRES },
]

/** The packages of the system tools missing here (by PATH): the tiers that need them skip outside CI. */
function missingTools(): string[] {
  return TOOLS.filter((tool) => !tool.found()).map((tool) => tool.pkg)
}

/** The run's one line about skipped tiers, or undefined when nothing is missing (or under CI, where they fail). */
export function skipSummary(
  missing: readonly string[] = missingTools(),
  skips = !IN_CI && !UNIT_TIER,
): string | undefined {
  if (!skips || !missing.length) return undefined
  return `keel tests: the tiers that need ${missing.join(', ')} were skipped; to run them: apt-get install ${missing.join(' ')} (under CI=true they fail instead)`
}
