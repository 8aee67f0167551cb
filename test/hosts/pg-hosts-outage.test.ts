// Three hosts on one Postgres schema while every one of their connections is terminated
// (pg_terminate_backend, again and again, for a second): calls made meanwhile answer at once
// (2xx, or 503 STORE_UNAVAILABLE), never hang; the hosts reconnect on their own (the LISTEN
// connections too); every run completes and nothing acknowledged is lost.
import pg from 'pg'
import { afterEach, describe, expect, it } from 'vitest'
import { PG_URL, postgresAvailable, testSchemas } from '../support/postgres.js'
import {
  followRun,
  type Host,
  type SeenEvent,
  startCallCounter,
  startHost,
  stopHosts,
} from './pg-hosts.js'

const RUNS = 18
/** A call that takes longer than this counts as a hang (the store's own bound is 35 s). */
const HANG_MS = 20_000
/**
 * How long a run's stream may take to show its charge completed. Past it the test fails naming
 * the run and what its stream saw, instead of waiting for the test timeout: the run waits for
 * `ph.go`, which is sent only once the stream showed the charge, so a stream that missed that
 * event would otherwise wait forever.
 */
const CHARGE_SEEN_MS = 90_000

if (postgresAvailable('pg-hosts-outage')) {
  const schemas = testSchemas('hosts_outage')
  describe('three hosts on one Postgres schema, connections terminated under load', () => {
    const hosts: Host[] = []
    let counter: Awaited<ReturnType<typeof startCallCounter>> | undefined
    // A try's hosts end with it: a retry must not route its starts to the first try's hosts
    // (they serve the first try's schema).
    afterEach(async () => {
      await stopHosts(hosts.splice(0))
      await counter?.close()
      counter = undefined
    })

    it('answers 503 during the outage, reconnects, completes every run, loses nothing acknowledged', {
      timeout: 240_000,
    }, async () => {
      const schema = schemas.next()
      const app = `skein_hosts_outage_${process.pid}`
      const sep = PG_URL.includes('?') ? '&' : '?'
      const env = { SKEIN_PG_URL: `${PG_URL}${sep}application_name=${app}` }
      counter = await startCallCounter(30)
      hosts.push(await startHost('h0', schema, counter.url, {}, env))
      hosts.push(
        ...(await Promise.all(
          ['h1', 'h2'].map((n) => startHost(n, schema, counter!.url, {}, env)),
        )),
      )
      const at = (i: number) => () => hosts[i % hosts.length]

      /** Every answer: status and code; a call that does not answer within HANG_MS is a hang. */
      const answers: Array<{ status: number; code?: string; during: boolean }> = []
      let outage = false
      const call = async (host: Host, path: string, body: unknown) => {
        const during = outage
        try {
          const res = await fetch(`${host.url}${path}`, {
            method: 'POST',
            headers: { 'content-type': 'application/json' },
            body: JSON.stringify(body),
            signal: AbortSignal.timeout(HANG_MS),
          })
          const json = (await res.json().catch(() => null)) as any
          answers.push({ status: res.status, code: json?.error?.code, during: during || outage })
          return { status: res.status, body: json }
        } catch (error) {
          answers.push({ status: (error as Error).name === 'TimeoutError' ? -1 : 0, during })
          return { status: 0, body: null }
        }
      }
      /** Retries until a 2xx (a 503 or a refused call is tried again, same key). */
      const until2xx = async (pick: () => Host, path: string, body: unknown) => {
        for (let n = 0; n < 400; n++) {
          const { status, body: json } = await call(pick(), path, body)
          if (status >= 200 && status < 300) return json
          if (status >= 400 && status < 500)
            throw new Error(`${path}: ${status} ${JSON.stringify(json)}`)
          await new Promise((r) => setTimeout(r, 50))
        }
        throw new Error(`${path}: never answered 2xx`)
      }

      const acked: SeenEvent[][] = []
      const streams: Array<Promise<{ events: SeenEvent[] }>> = []
      const work: Promise<void>[] = []
      const start = (i: number) => {
        const runId = `out-${i}`
        let charged!: () => void
        const chargeDone = new Promise<void>((resolve) => {
          charged = resolve
        })
        const seen: SeenEvent[] = []
        acked.push(seen)
        streams.push(
          followRun(runId, at(i + 1), (e) => {
            seen.push(e)
            if (e.type === 'runtime.effect.completed') charged()
          }),
        )
        work.push(
          (async () => {
            await until2xx(at(i), '/runs', {
              kind: 'workflow',
              definitionName: 'relay',
              runId,
              idempotencyKey: `start-${runId}`,
              input: {},
            })
            let timer: NodeJS.Timeout | undefined
            await Promise.race([
              chargeDone,
              new Promise<never>((_, reject) => {
                timer = setTimeout(
                  () =>
                    reject(
                      new Error(
                        `run ${runId}: its stream showed no runtime.effect.completed within ${CHARGE_SEEN_MS} ms (saw ${seen.map((e) => `${e.seq} ${e.type}`).join(', ')}); see the [outage] lines for the log`,
                      ),
                    ),
                  CHARGE_SEEN_MS,
                )
                timer.unref()
              }),
            ]).finally(() => clearTimeout(timer))
            await until2xx(at(i + 2), `/runs/${runId}/events`, {
              events: [{ type: 'ph.go', payload: { runId } }],
              idempotencyKey: `go-${runId}`,
            })
          })(),
        )
      }
      // A third of the runs before, a third during, a third after the outage.
      for (let i = 0; i < RUNS / 3; i++) start(i)
      await new Promise((r) => setTimeout(r, 300))

      const admin = new pg.Client({ connectionString: PG_URL })
      await admin.connect()
      let terminated = 0
      outage = true
      const until = Date.now() + 1000
      let i = RUNS / 3
      while (Date.now() < until) {
        if (i < (2 * RUNS) / 3) start(i++)
        const { rows } = await admin.query(
          'SELECT count(*)::int AS n FROM (SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1) t',
          [app],
        )
        terminated += rows[0].n
        await new Promise((r) => setTimeout(r, 20))
      }
      outage = false
      while (i < RUNS) start(i++)
      let workDone = 0
      for (const w of work) w.then(() => workDone++)
      const progress = setInterval(async () => {
        if (workDone === RUNS) return
        const { rows } = await admin.query(
          `SELECT run_id, status, tail, lease_owner, lease_epoch, lease_expires_at, next_deadline_at
           FROM "${schema}".skein_runs WHERE status IS DISTINCT FROM 'completed' ORDER BY run_id`,
        )
        const first = rows[0]?.run_id
        const events = first
          ? (
              await admin.query(
                `SELECT e.seq, e.type FROM "${schema}".skein_events e JOIN "${schema}".skein_runs x USING (run_no) WHERE x.run_id = $1 ORDER BY e.seq`,
                [first],
              )
            ).rows.map((r) => r.type)
          : []
        process.stderr.write(
          `[outage] work ${workDone}/${RUNS}, not completed: ${JSON.stringify(rows)} ${first}: ${events.join(' ')}\n`,
        )
      }, 10_000)
      progress.unref()
      let seen: Array<{ events: SeenEvent[] }>
      try {
        await Promise.all(work)
        seen = await Promise.all(streams)
      } finally {
        clearInterval(progress)
      }

      try {
        for (let r = 0; r < RUNS; r++) {
          const { rows } = await admin.query(
            `SELECT e.seq, e.id, e.type FROM "${schema}".skein_events e
             JOIN "${schema}".skein_runs x USING (run_no) WHERE x.run_id = $1 ORDER BY e.seq`,
            [`out-${r}`],
          )
          const log = rows.map((row) => ({ seq: Number(row.seq), id: row.id, type: row.type }))
          expect(log.at(-1)?.type).toBe('runtime.run.completed')
          // Nothing a client was shown is missing: every event an SSE stream delivered (it is
          // sent after its commit) is in the log with its id.
          const ids = new Map(log.map((e) => [e.seq, e.id]))
          expect(acked[r].filter((e) => ids.get(e.seq) !== e.id)).toEqual([])
          expect(seen[r].events.map((e) => e.seq)).toEqual(log.map((e) => e.seq))
        }
      } finally {
        await admin.end()
      }
      const during = answers.filter((a) => a.during)
      const unavailable = answers.filter((a) => a.status === 503)
      const hangs = answers.filter((a) => a.status === -1)
      console.log(
        `SCORE pg-outage hosts=3 runs=${RUNS} terminated=${terminated} calls=${answers.length} during_outage=${during.length} answered_503=${unavailable.length} hangs=${hangs.length}`,
      )
      expect(terminated).toBeGreaterThan(0)
      expect(hangs).toEqual([])
      for (const a of answers) {
        if (a.status >= 500) expect(a).toMatchObject({ status: 503, code: 'STORE_UNAVAILABLE' })
      }
    })
  })
}
