// `npm run bench`: every benchmark, each figure a median and, where a baseline applies, a
// ratio against it measured in the same run. Benchmarks are never tests.
import { existsSync } from 'node:fs'
import { printRows, type Row } from './table.js'

const suites: Array<[title: string, file: string, fn: string]> = [
  ['engine (in memory)', './engine.ts', 'benchEngine'],
  ['sqlite store appends', './sqlite-append.ts', 'benchSqliteAppend'],
  ['engine on sqlite', './sqlite-engine.ts', 'benchSqliteEngine'],
  ['http', './http.ts', 'benchHttp'],
  ['agents', './agent.ts', 'benchAgent'],
  ['workers', './worker.ts', 'benchWorker'],
]

const only = process.argv.slice(2)
console.log(`# Skein benchmarks — ${new Date().toISOString()} — node ${process.version}`)
for (const [title, file, fn] of suites) {
  if (only.length > 0 && !only.some((o) => file.includes(o))) continue
  if (!existsSync(new URL(file, import.meta.url))) continue
  const started = performance.now()
  try {
    const mod = await import(file)
    const rows: Row[] = await mod[fn]()
    printRows(title, rows)
  } catch (error) {
    console.log(`\n## ${title}\nfailed: ${(error as Error)?.stack ?? error}`)
  }
  console.log(`(${((performance.now() - started) / 1000).toFixed(1)} s)`)
}
