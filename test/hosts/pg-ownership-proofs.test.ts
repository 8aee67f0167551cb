// The many-processes proof (test/ownership/many-processes.test.ts) on Postgres, with its cluster (test/support/ownership-cluster.ts): 2 and 4
// processes on one schema signal 50 runs while their effects are in flight → 0 failed runs,
// external calls = effects.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import pg from 'pg'
import { afterEach, describe, expect, it } from 'vitest'
import { ownershipCluster, signalWhileInFlight } from '../support/ownership-cluster.js'
import { PG_URL, postgresAvailable, testSchemas } from '../support/postgres.js'

if (postgresAvailable('pg-ownership-proofs')) {
  const schemas = testSchemas('own_proofs')
  const dirs: string[] = []
  const clusters: Array<ReturnType<typeof ownershipCluster>> = []
  afterEach(async () => {
    for (const cluster of clusters.splice(0)) await cluster.close()
    for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true })
  })

  async function statuses(schema: string, runIds: string[]): Promise<Record<string, string>> {
    const db = new pg.Client({ connectionString: PG_URL })
    await db.connect()
    try {
      const { rows } = await db.query(
        `SELECT run_id, status FROM "${schema}".skein_runs WHERE run_id = ANY ($1)`,
        [runIds],
      )
      return Object.fromEntries(rows.map((r) => [r.run_id, r.status]))
    } finally {
      await db.end()
    }
  }

  describe('several processes on one Postgres schema', () => {
    for (const processes of [2, 4]) {
      it(`${processes} processes signal 50 runs while their effects are in flight: 0 failed, calls = effects`, async () => {
        const dir = mkdtempSync(join(tmpdir(), 'skein-pgown-'))
        dirs.push(dir)
        const schema = schemas.next()
        const cluster = ownershipCluster(`postgres:${schema}`, join(dir, 'calls.jsonl'), {
          effectMs: 1000,
          leaseMs: 5000,
          pollMs: 100,
        })
        clusters.push(cluster)
        // The first migrates the schema; the others find it done.
        const nodes = [await cluster.spawnNode('n0')]
        nodes.push(
          ...(await Promise.all(
            Array.from({ length: processes - 1 }, (_, i) => cluster.spawnNode(`n${i + 1}`)),
          )),
        )
        const r = await signalWhileInFlight(nodes, cluster, (ids) => statuses(schema, ids), 120_000)
        for (const status of r.startStatuses) expect([200, 201]).toContain(status)
        expect(r.refusedGo).toEqual([])
        expect(r.refusedGo2).toEqual([])
        console.log(
          `SCORE pg-ownership-${processes}p runs=${r.runs} failed=${r.failed.length} effects=${r.effects} external_calls=${r.calls}`,
        )
        expect(r.failed).toEqual([])
        expect(r.effects).toBe(100)
        expect(r.calls).toBe(100)
      }, 200_000)
    }
  })
}
