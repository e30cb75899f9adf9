import { spawnSync } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, test } from 'vitest'
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
    expect(summarize(r, { typecheckFailed: false, e2eFiles: E2E })).toEqual({
      lines: ['2 passed, 1 failed, 1 skipped'],
      ok: true,
    })
  })

  test('a skipped end-to-end test fails the gate and is named; a skip elsewhere does not', () => {
    const r = report({ [E2E[0]!]: ['skipped'], [E2E[1]!]: ['passed'] })
    expect(summarize(r, { typecheckFailed: false, e2eFiles: E2E })).toEqual({
      lines: [
        `ci: end-to-end test not run: ${E2E[0]}: "${E2E[0]} #0" was skipped`,
        'ci: 1 end-to-end test was not run (counted as one failure): install tmux, chromium and bubblewrap',
        '1 passed, 1 failed, 1 skipped',
      ],
      ok: false,
    })
  })

  test('an end-to-end file missing from the report, a missing report, and a failed typecheck each fail', () => {
    const missing = summarize(report({ [E2E[1]!]: ['passed'] }), { typecheckFailed: false, e2eFiles: E2E })
    expect(missing.ok).toBe(false)
    expect(missing.lines[0]).toBe(`ci: end-to-end test not run: ${E2E[0]}: not in the test report`)
    const none = summarize(undefined, { typecheckFailed: false, e2eFiles: [] })
    expect(none.lines).toEqual(['0 passed, 1 failed, 0 skipped'])
    const typecheck = summarize(report({}), { typecheckFailed: true, e2eFiles: [] })
    expect(typecheck).toEqual({
      lines: ['ci: typecheck failed (counted as one failure)', '0 passed, 1 failed, 0 skipped'],
      ok: false,
    })
  })

  test('knip findings count as one failure beside the tests, and a clean knip changes nothing', () => {
    const r = report({ 'packages/x/tests/a.test.ts': ['passed', 'passed'] })
    expect(summarize(r, { typecheckFailed: false, knipFailed: true, e2eFiles: [] })).toEqual({
      lines: [
        'ci: knip found unused files, exports or dependencies (counted as one failure)',
        '2 passed, 1 failed, 0 skipped',
      ],
      ok: false,
    })
    expect(summarize(r, { typecheckFailed: false, knipFailed: false, e2eFiles: [] })).toEqual({
      lines: ['2 passed, 0 failed, 0 skipped'],
      ok: true,
    })
  })

  test('the command line .ci/run calls exits 1 on a skipped end-to-end test or on knip findings', () => {
    const dir = mkdtempSync(join(tmpdir(), 'keel-ci-summary-'))
    try {
      const path = join(dir, 'report.json')
      writeFileSync(path, JSON.stringify(report({ [E2E[0]!]: ['skipped'], [E2E[1]!]: ['passed'] })))
      const run = (files: string, knip = '0') =>
        spawnSync(process.execPath, ['--import', 'tsx', 'scripts/ci-summary.ts', path, '0', files, knip], {
          cwd: REPO_ROOT,
          encoding: 'utf8',
        })
      const skipped = run(E2E.join('\n'))
      expect(skipped.status).toBe(1)
      expect(skipped.stdout.trim().split('\n').at(-1)).toBe('1 passed, 1 failed, 1 skipped')
      expect(run(E2E[1]!).status).toBe(0)
      const knip = run(E2E[1]!, '1')
      expect(knip.status).toBe(1)
      expect(knip.stdout.trim().split('\n').at(-1)).toBe('1 passed, 1 failed, 1 skipped')
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })
})
