// `npm run bench`: every benchmark, each figure a median and, where a baseline applies, a
// ratio against it measured in the same run. Benchmarks are never tests.
// Each suite runs in its own Node process, so no suite measures another's leftover heap (the
// engine suite parks 100,000 runs; a later suite would pay for them in every major GC).
import { spawnSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { printRows, type Row } from './table.js'

const suites: Array<[title: string, file: string, fn: string]> = [
  ['engine (in memory)', './engine.ts', 'benchEngine'],
  ['sqlite store appends', './sqlite-append.ts', 'benchSqliteAppend'],
  ['engine on sqlite', './sqlite-engine.ts', 'benchSqliteEngine'],
  ['engine on sqlite, processes on one file', './sqlite-processes.ts', 'benchSqliteProcesses'],
  ['projectors on sqlite', './projectors.ts', 'benchProjectors'],
  ['engine on postgres', './postgres-engine.ts', 'benchPostgresEngine'],
  ['many hosts on postgres', './postgres-hosts.ts', 'benchPostgresHosts'],
  ['http', './http.ts', 'benchHttp'],
  ['actor host', './actor.ts', 'benchActor'],
  ['agents', './agent.ts', 'benchAgent'],
  ['workers', './worker.ts', 'benchWorker'],
  ['replication to nats', './nats-replication.ts', 'benchNatsReplication'],
  ['opentelemetry', './otel.ts', 'benchOtel'],
  ['schedules', './schedules.ts', 'benchSchedules'],
  ['fan-out', './fan-out.ts', 'benchFanOut'],
  ['flow control', './flow.ts', 'benchFlow'],
  ['retention', './retention.ts', 'benchRetention'],
  ['retention soak', './retention-soak.ts', 'benchRetentionSoak'],
  ['attribute-search', './attribute-search.ts', 'benchAttributeSearch'],
  ['result across processes', './result-latency.ts', 'benchResultLatency'],
  ['bulk retry', './bulk-retry.ts', 'benchBulkRetry'],
  ['payload codec', './codec.ts', 'benchCodec'],
  ['skein vs peers (DBOS, Restate)', './peers.ts', 'benchPeers'],
]

async function runSuite(title: string, file: string, fn: string): Promise<void> {
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

const args = process.argv.slice(2)
if (args[0] === '--suite') {
  const suite = suites.find(([, file]) => file === args[1])
  if (!suite) throw new Error(`no suite ${args[1]}`)
  await runSuite(...suite)
} else {
  console.log(`# Skein benchmarks — ${new Date().toISOString()} — node ${process.version}`)
  for (const [title, file] of suites) {
    if (args.length > 0 && !args.some((o) => file.includes(o))) continue
    if (!existsSync(new URL(file, import.meta.url))) continue
    const child = spawnSync(
      process.execPath,
      [...process.execArgv, fileURLToPath(import.meta.url), '--suite', file],
      { stdio: 'inherit' },
    )
    if (child.status !== 0) console.log(`\n## ${title}\nfailed: exit ${child.status}`)
  }
}
