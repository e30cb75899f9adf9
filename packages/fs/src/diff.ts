// A small line diff (Myers' O((N+M)·D) algorithm on the part between the common prefix and suffix) and a unified
// diff printer. Edits touch a few lines of a file, so D stays small; past `maxEdits` the changed middle is shown
// as one block replacement, which is still a correct diff, just not a minimal one.

export type DiffOp = { op: 'equal' | 'delete' | 'insert'; line: string }

/** Splits keeping each line's terminator, so a missing final newline is a visible difference. */
export function splitLines(text: string): string[] {
  if (!text) return []
  return text.split(/(?<=\n)/)
}

function myers(a: readonly string[], b: readonly string[], maxEdits: number): DiffOp[] | undefined {
  const n = a.length
  const m = b.length
  const max = n + m
  const offset = max + 1
  const v = new Int32Array(2 * max + 3)
  // trace[d] holds v for diagonals -d-1..d+1 as they stood before round d: all backtracking needs, O(D²) in total.
  const trace: Int32Array[] = []
  for (let d = 0; d <= Math.min(max, maxEdits); d++) {
    trace.push(v.slice(offset - d - 1, offset + d + 2))
    for (let k = -d; k <= d; k += 2) {
      let x = k === -d || (k !== d && v[offset + k - 1]! < v[offset + k + 1]!) ? v[offset + k + 1]! : v[offset + k - 1]! + 1
      let y = x - k
      while (x < n && y < m && a[x] === b[y]) { x++; y++ }
      v[offset + k] = x
      if (x >= n && y >= m) return backtrack(a, b, trace, d)
    }
  }
  return undefined
}

function backtrack(a: readonly string[], b: readonly string[], trace: Int32Array[], found: number): DiffOp[] {
  const ops: DiffOp[] = []
  let x = a.length
  let y = b.length
  for (let d = found; d >= 0; d--) {
    const before = trace[d]!
    const at = (k: number) => before[k + d + 1]!
    const k = x - y
    const prevK = k === -d || (k !== d && at(k - 1) < at(k + 1)) ? k + 1 : k - 1
    const prevX = at(prevK)
    const prevY = prevX - prevK
    while (x > prevX && y > prevY) {
      ops.push({ op: 'equal', line: a[--x]! })
      y--
    }
    if (d > 0) {
      if (x === prevX) ops.push({ op: 'insert', line: b[--y]! })
      else ops.push({ op: 'delete', line: a[--x]! })
    }
  }
  return ops.reverse()
}

export function diffLines(a: readonly string[], b: readonly string[], maxEdits = 2000): DiffOp[] {
  let start = 0
  while (start < a.length && start < b.length && a[start] === b[start]) start++
  let endA = a.length
  let endB = b.length
  while (endA > start && endB > start && a[endA - 1] === b[endB - 1]) { endA--; endB-- }
  const midA = a.slice(start, endA)
  const midB = b.slice(start, endB)
  const middle = myers(midA, midB, maxEdits) ?? [
    ...midA.map((line): DiffOp => ({ op: 'delete', line })),
    ...midB.map((line): DiffOp => ({ op: 'insert', line })),
  ]
  return [
    ...a.slice(0, start).map((line): DiffOp => ({ op: 'equal', line })),
    ...middle,
    ...a.slice(endA).map((line): DiffOp => ({ op: 'equal', line })),
  ]
}

export interface UnifiedDiff {
  /** Hunks only (no file header), one string per output line. */
  lines: string[]
  added: number
  removed: number
}

const NO_NEWLINE = '\\ No newline at end of file'

/** A unified diff with `context` lines around each change; CR before LF is not shown. */
export function unifiedDiff(oldText: string, newText: string, context = 3): UnifiedDiff {
  const ops = diffLines(splitLines(oldText), splitLines(newText))
  const lines: string[] = []
  let added = 0
  let removed = 0
  const changes: number[] = []
  ops.forEach((op, i) => { if (op.op !== 'equal') changes.push(i) })
  // Line numbers before each op, so hunk headers can be read off directly.
  const oldBefore: number[] = []
  const newBefore: number[] = []
  let o = 0
  let nw = 0
  for (const op of ops) {
    oldBefore.push(o)
    newBefore.push(nw)
    if (op.op !== 'insert') o++
    if (op.op !== 'delete') nw++
  }
  oldBefore.push(o)
  newBefore.push(nw)
  let c = 0
  while (c < changes.length) {
    const from = Math.max(0, changes[c]! - context)
    let last = changes[c]!
    while (c + 1 < changes.length && changes[c + 1]! - last <= 2 * context) last = changes[++c]!
    c++
    const to = Math.min(ops.length, last + context + 1)
    const oldCount = oldBefore[to]! - oldBefore[from]!
    const newCount = newBefore[to]! - newBefore[from]!
    const oldStart = oldCount ? oldBefore[from]! + 1 : oldBefore[from]!
    const newStart = newCount ? newBefore[from]! + 1 : newBefore[from]!
    lines.push(`@@ -${oldStart},${oldCount} +${newStart},${newCount} @@`)
    for (let i = from; i < to; i++) {
      const { op, line } = ops[i]!
      const sign = op === 'equal' ? ' ' : op === 'delete' ? '-' : '+'
      if (op === 'insert') added++
      if (op === 'delete') removed++
      lines.push(sign + line.replace(/\r?\n$/, ''))
      if (!line.endsWith('\n')) lines.push(NO_NEWLINE)
    }
  }
  return { lines, added, removed }
}
