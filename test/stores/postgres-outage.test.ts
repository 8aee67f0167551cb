import { once } from 'node:events'
import { createServer, type Server, type Socket } from 'node:net'
import pg from 'pg'
import { createEngine, StoreUnavailableError } from 'skein'
import { type PostgresStore, postgresStore } from 'skein/postgres'
import { makeEnvelopes } from 'skein/testing'
import { afterEach, describe, expect, it } from 'vitest'
import { waitFor } from '../support/children.js'
import { PG_URL, postgresAvailable, testSchemas } from '../support/postgres.js'

/** A TCP server on 127.0.0.1 that accepts connections and never answers (a hung database). */
async function muteServer(): Promise<{ url: string; close(): Promise<void> }> {
  const sockets = new Set<Socket>()
  const server: Server = createServer((socket) => {
    sockets.add(socket)
    socket.on('close', () => sockets.delete(socket))
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  const { port } = server.address() as { port: number }
  return {
    url: `postgres://postgres@127.0.0.1:${port}/test`,
    close: async () => {
      for (const socket of sockets) socket.destroy()
      server.close()
      await once(server, 'close')
    },
  }
}

/** A port on 127.0.0.1 with nothing listening (taken, then released). */
async function closedPortUrl(): Promise<string> {
  const server = createServer()
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  const { port } = server.address() as { port: number }
  server.close()
  await once(server, 'close')
  return `postgres://postgres@127.0.0.1:${port}/test`
}

if (postgresAvailable('postgres-outage')) {
  const schemas = testSchemas('outage')
  const cleanups: Array<() => Promise<unknown>> = []
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup()
  })
  const track = <T extends { close(): Promise<unknown> }>(handle: T): T => {
    cleanups.push(() => handle.close())
    return handle
  }

  describe('postgres store when the database goes away', () => {
    it('loses nothing acknowledged when its connections are terminated mid-load, fails calls meanwhile with STORE_UNAVAILABLE, and reconnects', async () => {
      const app = `skein_outage_${process.pid}`
      const store = track(
        postgresStore(
          { connectionString: `${PG_URL}?application_name=${app}` },
          { schema: schemas.next(), maxConnections: 4 },
        ),
      )
      await store.ready()
      const acked = new Map<string, number[]>()
      const errors: unknown[] = []
      let stop = false
      let outage = false
      let acksAfterOutage = 0
      /** One writer per run: appends 1–3 events at its tail; after a failure, re-reads it. */
      const writer = async (runId: string) => {
        const mine: number[] = []
        acked.set(runId, mine)
        let tail = 0
        while (!stop) {
          const count = 1 + (tail % 3)
          try {
            await store.append(runId, makeEnvelopes(runId, tail + 1, count), { expectedSeq: tail })
            for (let i = 1; i <= count; i++) mine.push(tail + i)
            tail += count
            if (!outage && errors.length > 0) acksAfterOutage++
          } catch (error) {
            errors.push(error)
            // The append may or may not have committed: the log says which.
            while (!stop) {
              try {
                tail = await store.tail(runId)
                break
              } catch (again) {
                errors.push(again)
                await new Promise((r) => setTimeout(r, 5))
              }
            }
          }
        }
      }
      const admin = new pg.Client({ connectionString: PG_URL })
      await admin.connect()
      cleanups.push(() => admin.end())
      const writers = Array.from({ length: 8 }, (_, i) => writer(`run-${i}`))
      // A try that fails stops its writers before its store closes (they would spin on).
      cleanups.push(async () => {
        stop = true
        await Promise.allSettled(writers)
      })
      const total = () => [...acked.values()].reduce((n, seqs) => n + seqs.length, 0)
      const seen = () =>
        `${total()} event(s) acknowledged, ${acksAfterOutage} append(s) after the outage, ${errors.length} error(s)${errors.length > 0 ? `, the last: ${String(errors.at(-1))}` : ''}`
      await waitFor('200 events acknowledged before the outage', () => total() >= 200, {
        withinMs: 12_000,
        seen,
      })

      // The outage: every connection of the store is terminated, again and again, for 400 ms.
      outage = true
      let terminated = 0
      const until = Date.now() + 400
      while (Date.now() < until) {
        const { rows } = await admin.query(
          'SELECT count(*)::int AS n FROM (SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1) t',
          [app],
        )
        terminated += rows[0].n
        await new Promise((r) => setTimeout(r, 10))
      }
      outage = false
      // Afterwards the store reconnects on its own: the writers go on acknowledging.
      await waitFor('100 appends acknowledged after the outage', () => acksAfterOutage >= 100, {
        withinMs: 12_000,
        seen,
      })
      stop = true
      await Promise.all(writers)

      expect(terminated).toBeGreaterThan(0)
      expect(errors.length).toBeGreaterThan(0)
      for (const error of errors) {
        expect(StoreUnavailableError.is(error), String(error)).toBe(true)
        expect((error as Error).message).toMatch(
          /postgres store: .* failed: the database is unavailable/,
        )
      }
      // Every acknowledged event is in its log, and each log is whole: 1..tail, no gap.
      for (const [runId, seqs] of acked) {
        const log = await store.read(runId)
        expect(log.map((e) => e.seq)).toEqual(Array.from({ length: log.length }, (_, i) => i + 1))
        const kept = new Set(log.map((e) => e.seq))
        expect(seqs.filter((seq) => !kept.has(seq))).toEqual([])
        expect(log).toStrictEqual(
          makeEnvelopes(runId, 1, log.length).map((e, i) => ({ ...e, id: log[i].id })),
        )
      }
    })

    it('fails calls fast with STORE_UNAVAILABLE when nothing listens, and the HTTP API answers 503', async () => {
      const store = track(
        postgresStore({ connectionString: await closedPortUrl() }, { schema: 'skein' }),
      )
      const error = await store.read('r1').catch((e) => e)
      expect(StoreUnavailableError.is(error)).toBe(true)
      expect(error.message).toMatch(/the database is unavailable \(ECONNREFUSED\)/)
      const append = await store
        .append('r1', makeEnvelopes('r1', 1, 1), { expectedSeq: 0 })
        .catch((e) => e)
      expect(StoreUnavailableError.is(append)).toBe(true)

      const engine = createEngine({ store })
      cleanups.push(() => engine.stop())
      const response = await engine.fetch(new Request('http://skein.test/runs/r1'))
      expect(response?.status).toBe(503)
      const body = await response!.json()
      expect(body.error.code).toBe('STORE_UNAVAILABLE')
      expect(JSON.stringify(body)).not.toMatch(/127\.0\.0\.1|postgres:\/\//)
    })

    it('does not hang on a database that never answers, even on a pool without timeouts', async () => {
      const mute = await muteServer()
      cleanups.push(() => mute.close())
      // The user's own pool, with no timeouts of its own: the store's guard still answers.
      const pool = new pg.Pool({ connectionString: mute.url, max: 1 })
      pool.on('error', () => {})
      const store: PostgresStore = postgresStore(
        { pool },
        { schema: 'skein', connectTimeoutMs: 100, statementTimeoutMs: 200 },
      )
      const error = await store.tail('r1').catch((e) => e)
      expect(StoreUnavailableError.is(error)).toBe(true)
      expect(error.message).toMatch(/no answer from the database within 300 ms/)
      // The store's own pool times out the connect itself.
      const own = track(
        postgresStore({ connectionString: mute.url }, { schema: 'skein', connectTimeoutMs: 100 }),
      )
      const connect = await own.tail('r1').catch((e) => e)
      expect(StoreUnavailableError.is(connect)).toBe(true)
      await store.close()
      await mute.close()
      await pool.end().catch(() => {})
    })
  })
}
