import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import Database from 'better-sqlite3'
import type { EventEnvelope } from '../src/core/envelope.js'
import { sqliteStore } from '../src/stores/sqlite/index.js'
import { eventParams } from '../src/stores/sqlite/statements.js'
import { median, type Row } from './table.js'

const ROUNDS = 5
/** Events written per round at each batch size: enough commits to swamp timer noise. */
const EVENTS_PER_ROUND: Record<number, number> = { 1: 300, 10: 2000, 100: 5000 }
const CONCURRENT_RUNS = 16

const payload = {
  step: 'fetch-invoice',
  input: { customerId: 'cus_4QXb9', amount: 1299, currency: 'EUR', tags: ['a', 'b'] },
  note: 'a typical small event payload, around two hundred bytes of JSON text in total',
}

function batchOf(runId: string, fromSeq: number, size: number): EventEnvelope[] {
  return Array.from({ length: size }, (_, i) => ({
    id: `${runId}-${fromSeq + i}`,
    runId,
    seq: fromSeq + i,
    ts: 1_700_000_000_000 + fromSeq + i,
    type: 'step.completed',
    payload,
    threadId: 't-root',
    origin: 'runtime' as const,
  }))
}

/** Raw better-sqlite3: the store's own schema, synchronous FULL, one transaction per batch. */
function rawRound(path: string, size: number, total: number): number {
  sqliteStore({ path }).close() // creates the same schema, then steps aside
  const db = new Database(path)
  db.pragma('journal_mode = WAL')
  db.pragma('synchronous = FULL')
  const insert = db.prepare(
    `INSERT INTO skein_events (run_no, seq, id, ts, type, thread_id, origin, causation_id,
      effect_id, idempotency_key, event_key, payload) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
  )
  const runNo = Number(
    db.prepare('INSERT INTO skein_runs (run_id) VALUES (?)').run('r').lastInsertRowid,
  )
  const write = db.transaction((events: EventEnvelope[]) => {
    for (const e of events) insert.run(...eventParams(runNo, e))
  })
  const batches = Array.from({ length: total / size }, (_, b) => batchOf('r', b * size + 1, size))
  const start = performance.now()
  for (const batch of batches) write(batch)
  const ms = performance.now() - start
  db.close()
  return (total / ms) * 1000
}

async function storeRound(path: string, size: number, total: number): Promise<number> {
  const store = sqliteStore({ path })
  const batches = Array.from({ length: total / size }, (_, b) => batchOf('r', b * size + 1, size))
  const start = performance.now()
  for (const batch of batches) await store.append('r', batch, { expectedSeq: batch[0].seq - 1 })
  const ms = performance.now() - start
  await store.close()
  return (total / ms) * 1000
}

/** Many runs appending one event at a time concurrently: group commit shares the fsync. */
async function concurrentRound(path: string, total: number): Promise<number> {
  const store = sqliteStore({ path })
  const perRun = total / CONCURRENT_RUNS
  const start = performance.now()
  await Promise.all(
    Array.from({ length: CONCURRENT_RUNS }, async (_, r) => {
      for (let seq = 1; seq <= perRun; seq++) {
        await store.append(`r${r}`, batchOf(`r${r}`, seq, 1), { expectedSeq: seq - 1 })
      }
    }),
  )
  const ms = performance.now() - start
  await store.close()
  return (total / ms) * 1000
}

/**
 * SQLite append throughput (events/s) of `sqliteStore` against raw better-sqlite3 inserts
 * measured in the same run, at batch sizes 1, 10 and 100; median of ROUNDS rounds, each on a
 * fresh file in a temp dir on disk.
 */
export async function benchSqliteAppend(): Promise<Row[]> {
  const dir = mkdtempSync(join(tmpdir(), 'skein-bench-sqlite-'))
  let n = 0
  const fresh = () => join(dir, `${++n}.db`)
  const rows: Row[] = []
  try {
    for (const size of [1, 10, 100]) {
      const total = EVENTS_PER_ROUND[size]
      rawRound(fresh(), size, total) // warm-up: page cache, JIT
      await storeRound(fresh(), size, total)
      const raw: number[] = []
      const store: number[] = []
      for (let round = 0; round < ROUNDS; round++) {
        // Interleaved so drift in disk speed hits both sides alike.
        raw.push(rawRound(fresh(), size, total))
        store.push(await storeRound(fresh(), size, total))
      }
      const value = median(store)
      const baseline = median(raw)
      rows.push({
        name: `sqlite append, batch ${size}`,
        value: Math.round(value),
        unit: 'events/s',
        baseline: Math.round(baseline),
        ratio: Number((value / baseline).toFixed(2)),
        target: 0.7,
      })
    }
    const raw1 = rows[0].baseline!
    const grouped: number[] = []
    for (let round = 0; round < ROUNDS; round++) grouped.push(await concurrentRound(fresh(), 640))
    const value = median(grouped)
    rows.push({
      name: `sqlite append, batch 1, ${CONCURRENT_RUNS} runs concurrently (group commit)`,
      value: Math.round(value),
      unit: 'events/s',
      baseline: raw1,
      ratio: Number((value / raw1).toFixed(2)),
    })
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
  return rows
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  console.table(await benchSqliteAppend())
}
