// GET /runs/summaries on Postgres, paged by the client and the CLI: 1,250 runs (more than the
// CLI's page of 500 and the client's page of 100 asked here), each listed once, newest first,
// with the status filter applied by the store.
import { createEngine } from 'skein'
import { createEngineClient } from 'skein/client'
import type { PostgresStore } from 'skein/postgres'
import { makeEnvelopes } from 'skein/testing'
import { afterAll, describe, expect, it } from 'vitest'
import { runCli } from '../../src/cli/index.js'
import { freshPostgresStore, postgresAvailable, testSchemas } from '../support/postgres.js'

const RUNS = 1250

if (postgresAvailable('pg-summaries-paging')) {
  const schemas = testSchemas('paging')
  describe('summaries paging on Postgres through the client and the CLI', () => {
    let store: PostgresStore | undefined
    let stop = async () => {}
    afterAll(async () => {
      await stop()
      await store?.close()
    })

    it('lists every run once, newest first, page by page', { timeout: 120_000 }, async () => {
      store = freshPostgresStore(schemas)
      const ids = Array.from({ length: RUNS }, (_, i) => `page-${String(i).padStart(4, '0')}`)
      // Written in order (creation order is the listing order); every third one completed.
      for (let i = 0; i < RUNS; i += 50) {
        await Promise.all(
          ids.slice(i, i + 50).map((id, k) =>
            store!.append(id, makeEnvelopes(id, 1, 1), {
              expectedSeq: 0,
              meta: {
                status: (i + k) % 3 === 0 ? 'completed' : 'running',
                kind: 'workflow',
                definitionName: 'demo',
                definitionVersion: '1',
                createdAt: 1000 + i + k,
                updatedAt: 1000 + i + k,
                nextDeadlineAt: null,
              },
            }),
          ),
        )
        // Groups commit in call order, so creation order follows the loop between batches.
      }
      const engine = createEngine({ store, ownership: false })
      const server = await engine.serve({ port: 0, hostname: '127.0.0.1' })
      stop = async () => {
        await server.close()
        await engine.stop()
      }
      const client = createEngineClient({ baseUrl: server.url })
      const listed: string[] = []
      for await (const run of client.allRunSummaries({ limit: 100 })) listed.push(run.runId)
      expect(listed).toHaveLength(RUNS)
      expect(new Set(listed).size).toBe(RUNS)
      // Newest first, batch by batch (within a batch of 50 the group's order holds too).
      expect(listed[0] >= listed[listed.length - 1]).toBe(true)
      expect(listed.slice(0, 50).every((id) => id >= 'page-1200')).toBe(true)
      const completed: string[] = []
      for await (const run of client.allRunSummaries({ status: 'completed', limit: 7 }))
        completed.push(run.runId)
      expect(completed.sort()).toEqual(ids.filter((_, i) => i % 3 === 0).sort())

      const out: string[] = []
      const code = await runCli(['runs', '--json', '--url', server.url], {
        stdout: { write: (t: string) => out.push(t) },
        stderr: { write: () => {} },
        env: {},
      })
      expect(code).toBe(0)
      const fromCli = JSON.parse(out.join('')).runs.map((r: { runId: string }) => r.runId)
      expect(fromCli).toEqual(listed)
    })
  })
}
