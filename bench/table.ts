/** One benchmark figure; `ratio` = value / baseline measured in the same run. */
export interface Row {
  name: string
  value: number
  unit: string
  baseline?: number
  ratio?: number
  target?: number
  note?: string
}

export const median = (values: number[]): number => {
  const sorted = [...values].sort((a, b) => a - b)
  const mid = sorted.length >> 1
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2
}

export const percentile = (values: number[], p: number): number => {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]
}

const fmt = (n: number | undefined) =>
  n === undefined ? '' : Math.abs(n) >= 100 ? Math.round(n).toLocaleString('en') : n.toFixed(3)

export function printRows(title: string, rows: Row[]): void {
  console.log(`\n## ${title}`)
  console.log('| figure | value | unit | baseline | ratio | target |')
  console.log('|---|---|---|---|---|---|')
  for (const r of rows) {
    console.log(
      `| ${r.name}${r.note ? ` (${r.note})` : ''} | ${fmt(r.value)} | ${r.unit} | ${fmt(r.baseline)} | ${r.ratio === undefined ? '' : r.ratio.toFixed(2)} | ${r.target === undefined ? '' : fmt(r.target)} |`,
    )
  }
}
