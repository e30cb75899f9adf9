/** Small helpers for printing benchmark figures. */
export function percentile(samples: number[], p: number): number {
  const sorted = [...samples].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? NaN
}

export function median(samples: number[]): number {
  return percentile(samples, 50)
}

export function ms(value: number): string {
  return value < 1 ? `${(value * 1000).toFixed(1)} µs` : `${value.toFixed(2)} ms`
}

export function ratio(value: number, baseline: number): string {
  return `${(value / baseline).toFixed(2)}×`
}

export function row(label: string, ...cells: string[]): void {
  console.log(`${label.padEnd(46)} ${cells.join('  ')}`)
}
