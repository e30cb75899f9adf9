// A small line diff (Myers' O((N+M)·D) algorithm on the part between the common prefix and suffix) and a unified
// diff printer. Edits touch a few lines of a file, so D stays small; past `maxEdits`, or once the search has taken
// `maxWork` steps, the changed middle is shown as one block replacement, which is still a correct diff, just not a
// minimal one. Lines are compared as numbers (one id per distinct line), so a megabyte-long line costs one hash,
// not one string comparison per step: the whole diff stays bounded and fast whatever the file looks like.

export type DiffOp = { op: 'equal' | 'delete' | 'insert'; line: string }

/** Splits keeping each line's terminator, so a missing final newline is a visible difference. */
export function splitLines(text: string): string[] {
  if (!text) return []
  return text.split(/(?<=\n)/)
}

/** Steps (diagonal probes plus snake moves) one diff may take before it settles for a block replacement. */
const MAX_WORK = 5_000_000

function myers(
  a: ArrayLike<number>,
  b: ArrayLike<number>,
  maxEdits: number,
): Array<'equal' | 'delete' | 'insert'> | undefined {
  const n = a.length
  const m = b.length
  const max = n + m
  const offset = max + 1
  const v = new Int32Array(2 * max + 3)
  // trace[d] holds v for diagonals -d-1..d+1 as they stood before round d: all backtracking needs, O(D²) in total.
  const trace: Int32Array[] = []
  let work = 0
  for (let d = 0; d <= Math.min(max, maxEdits); d++) {
    trace.push(v.slice(offset - d - 1, offset + d + 2))
    for (let k = -d; k <= d; k += 2) {
      let x =
        k === -d || (k !== d && v[offset + k - 1]! < v[offset + k + 1]!) ? v[offset + k + 1]! : v[offset + k - 1]! + 1
      let y = x - k
      const start = x
      while (x < n && y < m && a[x] === b[y]) {
        x++
        y++
      }
      work += 1 + x - start
      v[offset + k] = x
      if (x >= n && y >= m) return backtrack(n, m, trace, d)
    }
    if (work > MAX_WORK) return undefined
  }
  return undefined
}

function backtrack(n: number, m: number, trace: Int32Array[], found: number): Array<'equal' | 'delete' | 'insert'> {
  const ops: Array<'equal' | 'delete' | 'insert'> = []
  let x = n
  let y = m
  for (let d = found; d >= 0; d--) {
    const before = trace[d]!
    const at = (k: number) => before[k + d + 1]!
    const k = x - y
    const prevK = k === -d || (k !== d && at(k - 1) < at(k + 1)) ? k + 1 : k - 1
    const prevX = at(prevK)
    const prevY = prevX - prevK
    while (x > prevX && y > prevY) {
      ops.push('equal')
      x--
      y--
    }
    if (d > 0) {
      if (x === prevX) {
        ops.push('insert')
        y--
      } else {
        ops.push('delete')
        x--
      }
    }
  }
  return ops.reverse()
}

export function diffLines(a: readonly string[], b: readonly string[], maxEdits = 2000): DiffOp[] {
  let start = 0
  while (start < a.length && start < b.length && a[start] === b[start]) start++
  let endA = a.length
  let endB = b.length
  while (endA > start && endB > start && a[endA - 1] === b[endB - 1]) {
    endA--
    endB--
  }
  const midA = a.slice(start, endA)
  const midB = b.slice(start, endB)
  const ids = new Map<string, number>()
  const idsOf = (lines: string[]) =>
    Int32Array.from(lines, (line) => {
      let id = ids.get(line)
      if (id === undefined) ids.set(line, (id = ids.size))
      return id
    })
  const script = myers(idsOf(midA), idsOf(midB), maxEdits)
  let middle: DiffOp[]
  if (script) {
    middle = []
    let i = 0
    let j = 0
    for (const op of script) {
      if (op === 'equal') {
        middle.push({ op, line: midA[i++]! })
        j++
      } else if (op === 'delete') middle.push({ op, line: midA[i++]! })
      else middle.push({ op, line: midB[j++]! })
    }
  } else {
    middle = [
      ...midA.map((line): DiffOp => ({ op: 'delete', line })),
      ...midB.map((line): DiffOp => ({ op: 'insert', line })),
    ]
  }
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
  ops.forEach((op, i) => {
    if (op.op !== 'equal') changes.push(i)
  })
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
