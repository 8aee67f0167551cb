// Three host processes, each serving HTTP, on one Postgres schema. A client spreads starts,
// signals and SSE streams across them: every run completes, every stream sees every event
// once and in order (the SSE host is never the one that appends), each external call once.
import pg from 'pg'
import { afterEach, describe, expect, it } from 'vitest'
import { PG_URL, postgresAvailable, testSchemas } from '../support/postgres.js'
import {
  followRun,
  type Host,
  postJson,
  type SeenEvent,
  startCallCounter,
  startHost,
  stopHosts,
} from './pg-hosts.js'

const RUNS = 24

if (postgresAvailable('pg-many-hosts')) {
  const schemas = testSchemas('hosts')
  describe('three hosts on one Postgres schema', () => {
    const hosts: Host[] = []
    let counter: Awaited<ReturnType<typeof startCallCounter>> | undefined
    // A try's hosts end with it: a retry must not route its starts to the first try's hosts
    // (they serve the first try's schema).
    afterEach(async () => {
      await stopHosts(hosts.splice(0))
      await counter?.close()
      counter = undefined
    })

    it('serves starts, signals and SSE from any host', { timeout: 180_000 }, async () => {
      const schema = schemas.next()
      counter = await startCallCounter(50)
      // The first host migrates the schema; the others find it done.
      hosts.push(await startHost('h0', schema, counter.url))
      hosts.push(
        ...(await Promise.all(['h1', 'h2'].map((n) => startHost(n, schema, counter!.url)))),
      )
      const at = (i: number) => () => hosts[i % hosts.length]

      const streams: Array<Promise<{ events: SeenEvent[] }>> = []
      const work: Promise<void>[] = []
      for (let i = 0; i < RUNS; i++) {
        const runId = `relay-${i}`
        let charged!: () => void
        const chargeDone = new Promise<void>((resolve) => {
          charged = resolve
        })
        streams.push(
          followRun(runId, at(i + 1), (e) => {
            if (e.type === 'runtime.effect.completed') charged()
          }),
        )
        work.push(
          (async () => {
            const started = await postJson(at(i), '/runs', {
              kind: 'workflow',
              definitionName: 'relay',
              runId,
              input: {},
            })
            expect(started.status).toBeLessThan(300)
            await chargeDone
            const body = {
              events: [{ type: 'ph.go', payload: { runId } }],
              idempotencyKey: `go-${runId}`,
            }
            const signalled = await postJson(at(i + 2), `/runs/${runId}/events`, body)
            expect(signalled.status).toBe(200)
            // The same signal again, on yet another host: appended once.
            const again = await postJson(at(i), `/runs/${runId}/events`, body)
            expect(again.status).toBe(200)
          })(),
        )
      }
      await Promise.all(work)
      const seen = await Promise.all(streams)

      const db = new pg.Client({ connectionString: PG_URL })
      await db.connect()
      try {
        for (let i = 0; i < RUNS; i++) {
          const runId = `relay-${i}`
          const { rows } = await db.query(
            `SELECT e.seq, e.id, e.type FROM "${schema}".skein_events e
             JOIN "${schema}".skein_runs r USING (run_no) WHERE r.run_id = $1 ORDER BY e.seq`,
            [runId],
          )
          const log = rows.map((r) => ({ seq: Number(r.seq), id: r.id, type: r.type }))
          expect(log.at(-1)?.type).toBe('runtime.run.completed')
          // Every event once, in order, on a host that did not append them.
          expect(seen[i].events).toEqual(log)
          expect(log.filter((e) => e.type === 'ph.go')).toHaveLength(1)
        }
      } finally {
        await db.end()
      }
      const perStep = new Map<string, number>()
      for (const c of counter.calls)
        perStep.set(`${c.run}/${c.step}`, (perStep.get(`${c.run}/${c.step}`) ?? 0) + 1)
      expect(perStep.size).toBe(RUNS * 2)
      expect([...perStep.values()].every((n) => n === 1)).toBe(true)
      const byHost = new Map<string, number>()
      for (const c of counter.calls) byHost.set(c.host, (byHost.get(c.host) ?? 0) + 1)
      console.log(
        `many-hosts: ${RUNS} runs, ${counter.calls.length} external calls, by host ${JSON.stringify(Object.fromEntries(byHost))}`,
      )
    })
  })
}
