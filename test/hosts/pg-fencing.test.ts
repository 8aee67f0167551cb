// Fencing on Postgres: SIGSTOP the owner of runs
// whose effects are in flight, past its lease; another host takes them over (claimDue) and
// appends; SIGCONT the first: its effects finish and its appends are refused (LEASE_LOST).
// Printed as `SCORE pg-fencing trials=… stale_appends_accepted=0 forked_logs=0 duplicate_effects=…`.
import pg from 'pg'
import { afterEach, describe, expect, it } from 'vitest'
import { PG_URL, postgresAvailable, testSchemas } from '../support/postgres.js'
import { type Host, postJson, startCallCounter, startHost, stopHosts } from './pg-hosts.js'

const ROUNDS = 4
const RUNS_PER_ROUND = 6
const LEASE_MS = 1000

async function until(what: string, check: () => Promise<boolean> | boolean, ms = 60_000) {
  const end = Date.now() + ms
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`)
    await new Promise((r) => setTimeout(r, 25))
  }
}

if (postgresAvailable('pg-fencing')) {
  const schemas = testSchemas('fencing')
  describe('fencing on Postgres: SIGSTOP the owner past its lease, SIGCONT it', () => {
    const hosts: Host[] = []
    let counter: Awaited<ReturnType<typeof startCallCounter>> | undefined
    // A try's hosts end with it (a retry must not share the machine with the first try's,
    // one maybe frozen).
    afterEach(async () => {
      for (const h of hosts) if (h.alive) h.child.kill('SIGCONT')
      await stopHosts(hosts.splice(0))
      await counter?.close()
      counter = undefined
    })

    it(`${ROUNDS * RUNS_PER_ROUND} trials: no stale append accepted, no forked log`, {
      timeout: 240_000,
    }, async () => {
      const schema = schemas.next()
      // The frozen owner's calls answer late (after it is stopped); the others' at once.
      counter = await startCallCounter(50, (c) => (c.host === 'a' ? 1500 : 50))
      const engine = { ownership: { leaseMs: LEASE_MS, renewMs: 300, pollMs: 100 } }
      const a = await startHost('a', schema, counter.url, engine)
      const b = await startHost('b', schema, counter.url, engine)
      hosts.push(a, b)
      const db = new pg.Client({ connectionString: PG_URL })
      await db.connect()
      const run = async (runId: string) =>
        (
          await db.query(
            `SELECT tail, status, lease_owner, lease_epoch FROM "${schema}".skein_runs WHERE run_id = $1`,
            [runId],
          )
        ).rows[0]
      const log = async (runId: string) =>
        (
          await db.query(
            `SELECT e.seq, e.type, e.payload FROM "${schema}".skein_events e
             JOIN "${schema}".skein_runs x USING (run_no) WHERE x.run_id = $1 ORDER BY e.seq`,
            [runId],
          )
        ).rows.map((r) => ({ seq: Number(r.seq), type: r.type, payload: JSON.parse(r.payload) }))
      const ownedBy = (owner: string | null, host: Host) =>
        typeof owner === 'string' && owner.split(':')[1] === String(host.child.pid)

      let stale = 0
      let forked = 0
      let trials = 0
      let refusedTakeovers = 0
      try {
        for (let round = 0; round < ROUNDS; round++) {
          const ids = Array.from({ length: RUNS_PER_ROUND }, (_, i) => `fence-${round}-${i}`)
          await Promise.all(
            ids.map((runId) =>
              postJson(() => a, '/runs', {
                kind: 'workflow',
                definitionName: 'relay',
                runId,
                input: {},
              }),
            ),
          )
          // a has called the service for every run (its answers are held): freeze a.
          await until('a to call for every run', () =>
            ids.every((id) => counter!.calls.some((c) => c.run === id && c.host === 'a')),
          )
          a.child.kill('SIGSTOP')
          // b takes every run over once a's lease has expired, and appends (epoch + 1).
          await until('b to take every run over', async () => {
            for (const id of ids) {
              const row = await run(id)
              if (!ownedBy(row?.lease_owner, b)) return false
            }
            return ids.every((id) => counter!.calls.some((c) => c.run === id && c.host === 'b'))
          })
          const tails = new Map<string, number>()
          for (const id of ids) tails.set(id, Number((await run(id)).tail))
          // Let a's held answers arrive, then wake a: it finishes its attempts and tries to
          // record them with its old epoch.
          await new Promise((r) => setTimeout(r, 1600))
          a.child.kill('SIGCONT')
          // The runs go on under b: signal each once its wait is open.
          for (const id of ids) {
            await until(`${id} to wait`, async () =>
              (await log(id)).some((e) => e.type === 'runtime.wait.registered'),
            )
            const res = await postJson(() => b, `/runs/${id}/events`, {
              events: [{ type: 'ph.go', payload: { runId: id } }],
              idempotencyKey: `go-${id}`,
            })
            expect(res.status).toBe(200)
          }
          await until('every run of the round to complete', async () => {
            for (const id of ids) if ((await run(id)).status !== 'completed') return false
            return true
          })
          for (const id of ids) {
            trials++
            const events = await log(id)
            if (events.some((e, i) => e.seq !== i + 1)) forked++
            // a's attempt 1 was recorded interrupted by b; any outcome a recorded for it after
            // the take-over is a stale append that got through.
            const byA = events.filter(
              (e) =>
                e.seq > (tails.get(id) ?? 0) &&
                (e.type === 'runtime.effect.completed' || e.type === 'workflow.node.finished') &&
                e.payload?.result?.host === 'a',
            )
            stale += byA.length
            if (
              !events.some(
                (e) => e.type === 'runtime.effect.failed' && e.payload?.reason === 'interrupted',
              )
            )
              refusedTakeovers++
          }
        }
      } finally {
        await db.end()
      }
      // a did try: its outcome appends (or renewals) for the frozen runs were refused.
      const refusedByA = new Set(
        [...a.output().matchAll(/refused (?:append|renewal) (\S+)/g)].map((m) => m[1]),
      )
      const appendsRefused = new Set(
        [...a.output().matchAll(/refused append (\S+)/g)].map((m) => m[1]),
      ).size
      const perStep = new Map<string, number>()
      for (const c of counter.calls) {
        const k = `${c.run}/${c.step}`
        perStep.set(k, (perStep.get(k) ?? 0) + 1)
      }
      const duplicates = [...perStep.values()].reduce((n, count) => n + count - 1, 0)
      console.log(
        `SCORE pg-fencing trials=${trials} stale_appends_accepted=${stale} forked_logs=${forked} duplicate_effects=${duplicates} stale_writers_refused=${refusedByA.size} (appends ${appendsRefused}) lease_ms=${LEASE_MS}`,
      )
      expect(trials).toBe(ROUNDS * RUNS_PER_ROUND)
      expect(stale).toBe(0)
      expect(forked).toBe(0)
      // Each frozen attempt ran again once under b, and only that.
      expect(refusedTakeovers).toBe(0)
      expect(duplicates).toBe(trials)
      expect(refusedByA.size).toBe(trials)
      // a is alive and well after its appends were refused.
      expect(a.alive).toBe(true)
    })
  })
}
