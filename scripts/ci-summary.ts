// The gate's last word (.ci/run): reads vitest's JSON report and prints "N passed, N failed, N skipped". A failed
// typecheck, knip findings (unused files, exports, dependencies), a missing report, and any test that did not run in
// an end-to-end file (tmux, Chromium, bubblewrap) each count as one failure, so none can leave the gate green.
//
//   node --import tsx scripts/ci-summary.ts <report.json> <typecheck exit code> <end-to-end test files, one per line>
//     [<knip exit code>]
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

/**
 * `ok` is false when a typecheck failed, knip found something, or an end-to-end test did not run (vitest's own exit
 * code covers the rest).
 */
export function summarize(
  report: Report | undefined,
  options: { typecheckFailed: boolean; knipFailed?: boolean; e2eFiles: readonly string[] },
): { lines: string[]; ok: boolean } {
  const { typecheckFailed, knipFailed = false, e2eFiles } = options
  const r = report ?? {}
  const lines: string[] = []
  const passed = r.numPassedTests ?? 0
  let failed =
    (r.numFailedTests ?? 0) + (typecheckFailed ? 1 : 0) + (knipFailed ? 1 : 0) + (r.numTotalTests === undefined ? 1 : 0)
  const skipped = (r.numPendingTests ?? 0) + (r.numTodoTests ?? 0)
  if (typecheckFailed) lines.push('ci: typecheck failed (counted as one failure)')
  if (knipFailed) lines.push('ci: knip found unused files, exports or dependencies (counted as one failure)')
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
  return { lines, ok: problems.length === 0 && !typecheckFailed && !knipFailed }
}

function invokedDirectly() {
  try {
    return realpathSync(process.argv[1] ?? '') === realpathSync(fileURLToPath(import.meta.url))
  } catch {
    return false
  }
}

if (invokedDirectly()) {
  const [path, typecheck, files = '', knip = '0'] = process.argv.slice(2)
  let report: Report | undefined
  try {
    report = JSON.parse(readFileSync(path, 'utf8'))
  } catch {}
  const { lines, ok } = summarize(report, {
    typecheckFailed: typecheck === '1',
    knipFailed: knip !== '0',
    e2eFiles: files.split('\n').filter(Boolean),
  })
  for (const line of lines) console.log(line)
  process.exitCode = ok ? 0 : 1
}
