import { spawnSync } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, test } from 'vitest'
import { skipSummary } from '../../test-support/system-tools.ts'
import { summarize, type Report } from '../ci-summary.ts'
import { REPO_ROOT } from '../gen-cordis-catalog.ts'

const E2E = ['packages/tui/tests/e2e.test.ts', 'packages/web/tests/browser.test.ts']

function report(statuses: Record<string, string[]>): Report {
  const tests = Object.values(statuses).flat()
  return {
    numTotalTests: tests.length,
    numPassedTests: tests.filter((s) => s === 'passed').length,
    numFailedTests: tests.filter((s) => s === 'failed').length,
    numPendingTests: tests.filter((s) => s === 'skipped' || s === 'pending').length,
    testResults: Object.entries(statuses).map(([file, list]) => ({
      name: `/repo/${file}`,
      assertionResults: list.map((status, i) => ({ fullName: `${file} #${i}`, status })),
    })),
  }
}

describe('the gate summary', () => {
  test('every end-to-end test ran: one plain line, ok', () => {
    const r = report({
      [E2E[0]!]: ['passed'],
      [E2E[1]!]: ['passed', 'failed'],
      'packages/x/tests/a.test.ts': ['skipped'],
    })
    expect(summarize(r, { failedChecks: [], e2eFiles: E2E })).toEqual({
      lines: ['2 passed, 1 failed, 1 skipped'],
      ok: true,
    })
  })

  test('a skipped end-to-end test fails the gate and is named; a skip elsewhere does not', () => {
    const r = report({ [E2E[0]!]: ['skipped'], [E2E[1]!]: ['passed'] })
    expect(summarize(r, { failedChecks: [], e2eFiles: E2E })).toEqual({
      lines: [
        `ci: end-to-end test not run: ${E2E[0]}: "${E2E[0]} #0" was skipped`,
        'ci: 1 end-to-end test was not run (counted as one failure): install tmux, chromium and bubblewrap',
        '1 passed, 1 failed, 1 skipped',
      ],
      ok: false,
    })
  })

  test('an end-to-end file missing from the report, a missing report, and each failed static check fail', () => {
    const missing = summarize(report({ [E2E[1]!]: ['passed'] }), { failedChecks: [], e2eFiles: E2E })
    expect(missing.ok).toBe(false)
    expect(missing.lines[0]).toBe(`ci: end-to-end test not run: ${E2E[0]}: not in the test report`)
    const none = summarize(undefined, { failedChecks: [], e2eFiles: [] })
    expect(none.lines).toEqual(['0 passed, 1 failed, 0 skipped'])
    const typecheck = summarize(report({}), { failedChecks: ['typecheck', 'knip'], e2eFiles: [] })
    expect(typecheck).toEqual({
      lines: [
        'ci: typecheck failed (counted as one failure)',
        'ci: knip failed (counted as one failure)',
        '0 passed, 2 failed, 0 skipped',
      ],
      ok: false,
    })
  })

  test('the command line .ci/run calls exits 1 on a skipped end-to-end test', () => {
    const dir = mkdtempSync(join(tmpdir(), 'keel-ci-summary-'))
    try {
      const path = join(dir, 'report.json')
      writeFileSync(path, JSON.stringify(report({ [E2E[0]!]: ['skipped'], [E2E[1]!]: ['passed'] })))
      const run = (files: string) =>
        spawnSync(process.execPath, ['--import', 'tsx', 'scripts/ci-summary.ts', path, '', files], {
          cwd: REPO_ROOT,
          encoding: 'utf8',
        })
      const skipped = run(E2E.join('\n'))
      expect(skipped.status).toBe(1)
      expect(skipped.stdout.trim().split('\n').at(-1)).toBe('1 passed, 1 failed, 1 skipped')
      expect(run(E2E[1]!).status).toBe(0)
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })
})

describe('the skip line of a run on a machine without the system tools', () => {
  test('one line naming what to install; none when nothing is missing, or where tests fail instead (CI)', () => {
    expect(skipSummary(['tmux', 'chromium', 'bubblewrap'], true)).toBe(
      'keel tests: the tiers that need tmux, chromium, bubblewrap were skipped; to run them: apt-get install tmux chromium bubblewrap (under CI=true they fail instead)',
    )
    expect(skipSummary([], true)).toBeUndefined()
    expect(skipSummary(['tmux'], false)).toBeUndefined()
  })
})
