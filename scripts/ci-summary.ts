// The gate's last word (.ci/run): reads vitest's JSON report and prints "N passed, N failed, N skipped". Each failed
// static check (typecheck, biome, knip), a missing report, and any test that did not run in an end-to-end file (tmux,
// Chromium, bubblewrap) count as one failure, so neither a red check nor a skipped tier can leave the gate green.
//
//   node --import tsx scripts/ci-summary.ts <report.json> <failed checks, space-separated> <end-to-end files, one per line>
import { readFileSync, realpathSync } from 'node:fs'
import { fileURLToPath } from 'node:url'

/** The parts of vitest's JSON report this reads. */
export interface Report {
  numPassedTests?: number
  numFailedTests?: number
  numPendingTests?: number
  numTodoTests?: number
  numTotalTests?: number
  testResults?: { name: string; assertionResults?: { title?: string; fullName?: string; status: string }[] }[]
}

/** `ok` is false when a static check failed or an end-to-end test did not run (vitest's exit code covers the rest). */
export function summarize(
  report: Report | undefined,
  options: { failedChecks: readonly string[]; e2eFiles: readonly string[] },
): { lines: string[]; ok: boolean } {
  const { failedChecks, e2eFiles } = options
  const r = report ?? {}
  const lines: string[] = []
  const passed = r.numPassedTests ?? 0
  let failed = (r.numFailedTests ?? 0) + failedChecks.length + (r.numTotalTests === undefined ? 1 : 0)
  const skipped = (r.numPendingTests ?? 0) + (r.numTodoTests ?? 0)
  for (const check of failedChecks) lines.push(`ci: ${check} failed (counted as one failure)`)
  const problems: string[] = []
  for (const file of e2eFiles) {
    const result = (r.testResults ?? []).find((t) => t.name === file || t.name.endsWith(`/${file}`))
    if (!result) {
      problems.push(`${file}: not in the test report`)
      continue
    }
    for (const a of result.assertionResults ?? []) {
      if (a.status !== 'passed' && a.status !== 'failed')
        problems.push(`${file}: "${a.fullName ?? a.title}" was ${a.status}`)
    }
  }
  for (const p of problems) lines.push(`ci: end-to-end test not run: ${p}`)
  if (problems.length) {
    lines.push(
      `ci: ${problems.length} end-to-end test${problems.length === 1 ? ' was' : 's were'} not run (counted as one failure): install tmux, chromium and bubblewrap`,
    )
    failed++
  }
  lines.push(`${passed} passed, ${failed} failed, ${skipped} skipped`)
  return { lines, ok: problems.length === 0 && failedChecks.length === 0 }
}

function invokedDirectly() {
  try {
    return realpathSync(process.argv[1] ?? '') === realpathSync(fileURLToPath(import.meta.url))
  } catch {
    return false
  }
}

if (invokedDirectly()) {
  const [path, checks = '', files = ''] = process.argv.slice(2)
  let report: Report | undefined
  try {
    report = JSON.parse(readFileSync(path, 'utf8'))
  } catch {}
  const { lines, ok } = summarize(report, {
    failedChecks: checks.split(' ').filter(Boolean),
    e2eFiles: files.split('\n').filter(Boolean),
  })
  for (const line of lines) console.log(line)
  process.exitCode = ok ? 0 : 1
}
