import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import {
  postgresSoakStorage,
  printSoak,
  type SoakStorage,
  soakRetention,
  sqliteSoakStorage,
} from '../../bench/retention-soak.js'
import { PG_URL, postgresAvailable } from '../support/postgres.js'
import { freshPath } from '../support/temp-dirs.js'

// The reduced retention soak (bench/retention-soak.ts; docs/data-lifecycle.md, "Retention"):
// short runs under retention while live runs wait. Every short run completes,
// the live runs are untouched, and once the sweep drained the load the store holds the live
// runs and nothing else: the rows do not pile up.

const dir = mkdtempSync(join(tmpdir(), 'skein-soak-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))
const RUNS = 1000
const LIVE = 10

const storages: Array<{ name: string; make: () => SoakStorage }> = [
  { name: 'sqlite', make: () => sqliteSoakStorage(freshPath(dir, 'runs.db')) },
]
if (postgresAvailable('soak')) {
  storages.push({
    name: 'postgres',
    make: () => postgresSoakStorage(PG_URL, `t_soak_${process.pid}_${Date.now()}`),
  })
}

describe.each(storages)('a retention soak on $name', ({ make }) => {
  it(`${RUNS} short runs: deleted as they age, live runs untouched, the store drained`, async () => {
    const storage = make()
    try {
      // A far shorter limit than the full soak's 2 s: on a quiet machine the 1,000 runs take
      // well under a second, and runs must age out while the load still runs.
      const result = await soakRetention(storage, {
        runs: RUNS,
        live: LIVE,
        concurrency: 8,
        finishedAfterMs: 40,
        intervalMs: 20,
      })
      printSoak(result)
      expect(result.failures).toBe(0)
      expect(result.liveUntouched).toBe(LIVE)
      expect(result.liveCompleted).toBe(LIVE)
      expect(result.deletedTotal).toBe(RUNS)
      const drained = result.samples.find((s) => s.phase === 'drained')
      const peak = Math.max(...result.samples.map((s) => s.tables.skein_runs.rows))
      // Drained: the live runs alone; no deletion record, idempotency key or snapshot left of
      // the deleted runs beyond the records the last batch wrote.
      expect(drained?.tables.skein_runs.rows).toBe(LIVE)
      expect(drained?.tables.skein_events.rows).toBeLessThan(LIVE * 10)
      expect(drained?.tables.skein_deletions.rows).toBeLessThanOrEqual(500)
      // At no point did the store hold every run: the sweep kept up with the load.
      expect(peak).toBeLessThan(RUNS + LIVE)
    } finally {
      await storage.drop()
    }
  }, 60_000)
})
