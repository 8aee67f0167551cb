import pg from 'pg'
import {
  IdempotencyConflictError,
  InvalidRequestError,
  NotConfiguredError,
  SeqConflictError,
  StoreError,
} from 'skein'
import {
  type PostgresQueryable,
  type PostgresStore,
  postgresRunIndex,
  postgresStore,
  SCHEMA_VERSION,
} from 'skein/postgres'
import { makeEnvelopes } from 'skein/testing'
import { afterEach, describe, expect, it } from 'vitest'
import { postgresRegistry } from '../../src/actor/postgres-registry.js'
import { memoryStore } from '../../src/stores/memory/memory-store.js'
import { loadPg } from '../../src/stores/postgres/driver.js'
import { migrationSql, schemaName } from '../../src/stores/postgres/schema.js'
import { PG_URL, postgresAvailable, testSchemas } from '../support/postgres.js'

const meta = {
  status: 'running' as const,
  kind: 'workflow',
  definitionName: 'demo',
  definitionVersion: '2',
  createdAt: 1,
  updatedAt: 2,
  nextDeadlineAt: 99,
}

/** A pg pool that records every statement it runs (the store's calls, counted). */
function recordingPool(): PostgresQueryable & { texts: string[]; end(): Promise<void> } {
  const pool = new pg.Pool({ connectionString: PG_URL, max: 4 })
  const texts: string[] = []
  return {
    texts,
    query: (text: string, params?: unknown[]) => {
      texts.push(text)
      return pool.query(text, params)
    },
    end: () => pool.end(),
  }
}
const appendCalls = (texts: string[]) => texts.filter((t) => t.startsWith('SELECT o_req')).length

if (postgresAvailable('postgres-store')) {
  const schemas = testSchemas('store')
  const opened: Array<PostgresStore | { end(): Promise<void> }> = []
  const open = (
    schema: string,
    connection: Parameters<typeof postgresStore>[0] = { connectionString: PG_URL },
  ) => {
    const store = postgresStore(connection, { schema, maxConnections: 4 })
    opened.push(store)
    return store
  }
  afterEach(async () => {
    for (const handle of opened.splice(0).reverse()) {
      await ('close' in handle ? handle.close() : handle.end())
    }
  })

  describe('postgres store', () => {
    it('keeps events, meta, trims and snapshots across a reopen', async () => {
      const schema = schemas.next()
      const first = postgresStore({ connectionString: PG_URL }, { schema })
      const events = makeEnvelopes('r1', 1, 5, (seq) => ({ seq, text: 'ünïcode 🧵' }))
      await first.append('r1', events, { expectedSeq: 0, idempotencyKey: 'start', meta })
      await first.trim('r1', 3)
      await first.snapshots.save({ runId: 'r1', seq: 4, createdAt: 3, format: 1, data: { a: [1] } })
      await first.close()

      const again = open(schema)
      expect(await again.read('r1')).toStrictEqual(events.slice(2))
      expect(await again.bounds('r1')).toEqual({ head: 3, tail: 5 })
      expect(await again.listRuns()).toEqual(['r1'])
      expect(await again.listSummaries({ limit: 10 })).toEqual({
        runs: [{ runId: 'r1', ...meta }],
        nextCursor: null,
      })
      expect(await again.listRunsWithDeadlines()).toEqual([{ runId: 'r1', nextDeadlineAt: 99 }])
      expect((await again.snapshots.latest('r1'))?.data).toEqual({ a: [1] })
      const dup = again.append('r1', makeEnvelopes('r1', 6, 1), {
        expectedSeq: 5,
        idempotencyKey: 'start',
      })
      await expect(dup).rejects.toSatisfy(IdempotencyConflictError.is)
    })

    it('creates its schema, records the version, and migrates once when many processes start at once', async () => {
      const schema = schemas.next()
      const stores = Array.from({ length: 6 }, () => open(schema))
      await Promise.all(stores.map((store) => store.ready()))
      const { rows } = await schemas.admin.query(
        `SELECT version FROM "${schema}".skein_schema_version ORDER BY version`,
      )
      expect(rows).toEqual([{ version: SCHEMA_VERSION }])
      const tables = await schemas.admin.query(
        `SELECT table_name FROM information_schema.tables WHERE table_schema = $1 ORDER BY 1`,
        [schema],
      )
      expect(tables.rows.map((r) => r.table_name)).toEqual([
        'skein_actor_runs',
        'skein_claims',
        'skein_deletions',
        'skein_events',
        'skein_flow',
        'skein_flow_debounce',
        'skein_flow_rate',
        'skein_idempotency',
        'skein_projectors',
        'skein_run_attributes',
        'skein_run_index',
        'skein_runs',
        'skein_schedule_mark',
        'skein_schedules',
        'skein_schema_version',
        'skein_snapshots',
        'skein_wait_urls',
        'skein_worker_tasks',
      ])
      // Every store works on the one schema; nothing landed in public.
      await stores[0].append('r', makeEnvelopes('r', 1, 1), { expectedSeq: 0 })
      expect(await stores[5].tail('r')).toBe(1)
      const leaked = await schemas.admin.query(
        `SELECT count(*)::int AS n FROM information_schema.tables WHERE table_schema = 'public' AND table_name LIKE 'skein_%'`,
      )
      expect(leaked.rows[0].n).toBe(0)
    })

    it('keeps two apps on one database apart by schema', async () => {
      const [a, b] = [open(schemas.next()), open(schemas.next())]
      await a.append('same-id', makeEnvelopes('same-id', 1, 2), { expectedSeq: 0 })
      await b.append(
        'same-id',
        makeEnvelopes('same-id', 1, 1, () => 'b'),
        { expectedSeq: 0 },
      )
      expect(await a.tail('same-id')).toBe(2)
      expect((await b.read('same-id')).map((e) => e.payload)).toEqual(['b'])
    })

    it('adopts the run index and registry tables a v7 schema got from companions that made them at open', async () => {
      const schema = schemas.next()
      await schemas.admin.query(migrationSql(schemaName(schema), 7))
      // What postgresRunIndex and postgresRegistry ran when they opened, before v8.
      await schemas.admin.query(`
        CREATE TABLE "${schema}".skein_run_index (run_id text PRIMARY KEY, kind text NOT NULL,
          definition_name text NOT NULL, definition_version text NOT NULL, status text NOT NULL,
          tenant text, created_at bigint NOT NULL, updated_at bigint NOT NULL, seq bigint NOT NULL);
        INSERT INTO "${schema}".skein_run_index VALUES ('r1', 'workflow', 'd', 'v1', 'running', NULL, 1, 2, 3);
        CREATE TABLE "${schema}".skein_actor_runs (run_no bigserial PRIMARY KEY,
          run_id text NOT NULL UNIQUE, owner jsonb, kind text NOT NULL, definition_name text NOT NULL,
          definition_version text, created_at bigint NOT NULL, wake_at bigint);
        INSERT INTO "${schema}".skein_actor_runs (run_id, kind, definition_name, created_at)
          VALUES ('a1', 'workflow', 'd', 5);`)
      const store = open(schema) as PostgresStore
      expect(await postgresRunIndex({ store }).get('r1')).toMatchObject({ seq: 3 })
      const { runs } = await postgresRegistry({ store }).list()
      expect(runs.map((r) => r.runId)).toEqual(['a1'])
      const { rows } = await schemas.admin.query(
        `SELECT max(version)::int AS v FROM "${schema}".skein_schema_version`,
      )
      expect(rows[0].v).toBe(SCHEMA_VERSION)
    })

    it('refuses a store that is not a postgresStore for its companions', () => {
      const notPostgres = memoryStore()
      expect(() => postgresRunIndex({ store: notPostgres })).toThrow(/must be a postgresStore/)
      expect(() => postgresRegistry({ store: notPostgres })).toThrow(/must be a postgresStore/)
    })

    it('upgrades a schema written by an older skein in place, keeping its runs', async () => {
      const schema = schemas.next()
      // Version 1 as the first release wrote it, with one run in it.
      await schemas.admin.query(migrationSql(schemaName(schema), 1))
      await schemas.admin.query(
        `INSERT INTO "${schema}".skein_runs (run_id, tail, status, kind, definition_name,
           definition_version, created_at, updated_at) VALUES ('r1', 2, 'running', 'k', 'd', 'v1', 1, 1)`,
      )
      const { rows: before } = await schemas.admin.query(
        `SELECT max(version)::int AS v FROM "${schema}".skein_schema_version`,
      )
      expect(before[0].v).toBe(1)
      const upgraded = open(schema)
      await upgraded.ready()
      const { rows: after } = await schemas.admin.query(
        `SELECT max(version)::int AS v FROM "${schema}".skein_schema_version`,
      )
      expect(after[0].v).toBe(SCHEMA_VERSION)
      const { rows: index } = await schemas.admin.query(
        `SELECT 1 FROM pg_indexes WHERE schemaname = $1 AND indexname = 'skein_runs_status'`,
        [schema],
      )
      expect(index).toHaveLength(1)
      expect(await upgraded.tail('r1')).toBe(2)
      const page = await upgraded.listSummaries({ limit: 10, status: ['running'] })
      expect(page.runs.map((r) => r.runId)).toEqual(['r1'])
    })

    it('refuses a schema written by a newer skein, with a clear error, and writes nothing', async () => {
      const schema = schemas.next()
      await open(schema).ready()
      await schemas.admin.query(
        `INSERT INTO "${schema}".skein_schema_version (version) VALUES (99)`,
      )
      const newer = open(schema)
      const error = await newer.read('r1').catch((e) => e)
      expect(StoreError.is(error)).toBe(true)
      expect(error.message).toContain(
        `at version 99, newer than this skein understands (${SCHEMA_VERSION})`,
      )
      expect(error.details).toEqual({ schema, supported: SCHEMA_VERSION })
      await expect(
        newer.append('r1', makeEnvelopes('r1', 1, 1), { expectedSeq: 0 }),
      ).rejects.toSatisfy(StoreError.is)
      const { rows } = await schemas.admin.query(
        `SELECT count(*)::int AS n FROM "${schema}".skein_events`,
      )
      expect(rows[0].n).toBe(0)
    })

    it('refuses bad options before connecting', () => {
      for (const schema of ['Upper', 'has space', 'quote"d', '1digit', '', 'x'.repeat(64)]) {
        expect(() => postgresStore({ connectionString: PG_URL }, { schema })).toThrow(
          /lower-case Postgres identifier/,
        )
      }
      expect(() => postgresStore({} as any)).toThrow(InvalidRequestError)
      expect(() => postgresStore({ connectionString: PG_URL }, { connectTimeoutMs: 0 })).toThrow(
        /connectTimeoutMs must be a positive integer/,
      )
    })

    it('never forks a log across two stores on one schema', async () => {
      const schema = schemas.next()
      const [a, b] = [open(schema), open(schema)]
      await a.ready()
      // Racing first appends of a new run from two stores: exactly one wins.
      const results = await Promise.allSettled([
        a.append(
          'r1',
          makeEnvelopes('r1', 1, 2, () => 'a'),
          { expectedSeq: 0 },
        ),
        b.append(
          'r1',
          makeEnvelopes('r1', 1, 1, () => 'b'),
          { expectedSeq: 0 },
        ),
      ])
      expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1)
      const lost = results.find((r) => r.status === 'rejected') as PromiseRejectedResult
      expect(SeqConflictError.is(lost.reason)).toBe(true)
      const tail = await a.tail('r1')
      await b.append(
        'r1',
        makeEnvelopes('r1', tail + 1, 1, () => 'next'),
        { expectedSeq: tail },
      )
      await expect(
        a.append('r1', makeEnvelopes('r1', tail + 1, 1), { expectedSeq: tail }),
      ).rejects.toSatisfy(SeqConflictError.is)
      expect((await a.read('r1')).map((e) => e.seq)).toEqual(
        Array.from({ length: tail + 1 }, (_, i) => i + 1),
      )
    })

    it('group-commits concurrent appends into one call and fails only the conflicting or failing ones', async () => {
      const schema = schemas.next()
      const pool = recordingPool()
      opened.push(pool)
      const store = open(schema, { pool })
      await store.append('taken', makeEnvelopes('taken', 1, 1), {
        expectedSeq: 0,
        idempotencyKey: 'k',
      })
      // A write that really fails inside the transaction: a trigger refusing run "boom".
      await schemas.admin.query(`
        CREATE FUNCTION "${schema}".refuse() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN RAISE EXCEPTION 'refused by test trigger'; END $$;
        CREATE TRIGGER refuse BEFORE INSERT ON "${schema}".skein_events FOR EACH ROW
          WHEN (NEW.id LIKE 'boom-%') EXECUTE FUNCTION "${schema}".refuse();`)
      const seen: string[] = []
      store.subscribe('r0', () => seen.push('r0'))
      store.subscribe('boom', () => seen.push('boom'))
      pool.texts.length = 0

      const calls = Array.from({ length: 16 }, (_, i) =>
        store.append(`r${i}`, makeEnvelopes(`r${i}`, 1, 1 + (i % 4)), { expectedSeq: 0 }),
      )
      const stale = store.append('taken', makeEnvelopes('taken', 1, 1), { expectedSeq: 0 })
      const dupKey = store.append('taken', makeEnvelopes('taken', 2, 1), {
        expectedSeq: 1,
        idempotencyKey: 'k',
      })
      const boom = store.append('boom', makeEnvelopes('boom', 1, 3), {
        expectedSeq: 0,
        idempotencyKey: 'b',
        meta,
      })
      // Same run twice in one group: applied in call order inside the transaction.
      const next = store.append('taken', makeEnvelopes('taken', 2, 2), { expectedSeq: 1 })
      const after = store.append('taken', makeEnvelopes('taken', 4, 1), { expectedSeq: 3, meta })
      const results = await Promise.allSettled([...calls, stale, dupKey, boom, next, after])

      // One call for the group; the failed write made it redo the group isolated: two in all.
      expect(appendCalls(pool.texts)).toBe(2)
      expect(results.slice(0, 16).filter((r) => r.status === 'rejected')).toEqual([])
      const reasons = results.slice(16).map((r) => (r.status === 'rejected' ? r.reason : 'ok'))
      expect(SeqConflictError.is(reasons[0]), String(reasons[0])).toBe(true)
      expect(reasons[0].details).toEqual({ runId: 'taken', expectedSeq: 0, tail: 1 })
      expect(IdempotencyConflictError.is(reasons[1])).toBe(true)
      expect(StoreError.is(reasons[2]) && /refused by test trigger/.test(reasons[2].message)).toBe(
        true,
      )
      expect(reasons[2].details).toEqual({ sqlstate: 'P0001' })
      expect(reasons.slice(3)).toEqual(['ok', 'ok'])
      expect(seen).toEqual(['r0'])

      for (let i = 0; i < 16; i++) expect(await store.tail(`r${i}`)).toBe(1 + (i % 4))
      expect(await store.tail('taken')).toBe(4)
      expect(await store.bounds('boom')).toEqual({ head: 0, tail: 0 })
      expect((await store.listSummaries({ limit: 10 })).runs).toEqual([{ runId: 'taken', ...meta }])
      // The failed request took its idempotency key with it.
      await schemas.admin.query(`DROP TRIGGER refuse ON "${schema}".skein_events`)
      await store.append('boom', makeEnvelopes('boom', 1, 1), {
        expectedSeq: 0,
        idempotencyKey: 'b',
      })
    })

    it('fails a lone append whose write fails with a StoreError, and writes nothing of it', async () => {
      const schema = schemas.next()
      const store = open(schema)
      await store.append('solo', makeEnvelopes('solo', 1, 1), { expectedSeq: 0 })
      await schemas.admin.query(`
        CREATE FUNCTION "${schema}".refuse() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN RAISE EXCEPTION 'refused by test trigger'; END $$;
        CREATE TRIGGER refuse BEFORE INSERT ON "${schema}".skein_events FOR EACH ROW
          WHEN (NEW.id = 'solo-e3') EXECUTE FUNCTION "${schema}".refuse();`)
      const error = await store
        .append('solo', makeEnvelopes('solo', 2, 2), { expectedSeq: 1, meta })
        .catch((e) => e)
      expect(StoreError.is(error) && /refused by test trigger/.test(error.message)).toBe(true)
      expect(error.details).toEqual({ sqlstate: 'P0001' })
      expect(await store.bounds('solo')).toEqual({ head: 1, tail: 1 })
      expect((await store.listSummaries({ limit: 10 })).runs).toEqual([])
      await store.append('solo', makeEnvelopes('solo', 2, 1), { expectedSeq: 1 })
      expect(await store.tail('solo')).toBe(2)
    })

    it('rejects an append whose payload does not serialize on its own, writing nothing of it', async () => {
      const store = open(schemas.next())
      await store.ready()
      const cyclic: any = { a: 1 }
      cyclic.self = cyclic
      const bad = makeEnvelopes('bad', 1, 1, () => ({ n: 10n }) as any)
      const results = await Promise.allSettled([
        store.append('good', makeEnvelopes('good', 1, 2), { expectedSeq: 0 }),
        store.append('bad', bad, { expectedSeq: 0 }),
        store.append(
          'cyclic',
          makeEnvelopes('cyclic', 1, 1, () => cyclic),
          { expectedSeq: 0 },
        ),
      ])
      expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'rejected'])
      for (const r of results.slice(1)) {
        expect(StoreError.is((r as PromiseRejectedResult).reason)).toBe(true)
      }
      expect(await store.listRuns()).toEqual(['good'])
    })

    it('commits a group of deferSync appends with synchronous_commit off, any other durably, and sync flushes', async () => {
      const schema = schemas.next()
      const pool = recordingPool()
      opened.push(pool)
      const store = open(schema, { pool })
      await store.ready()
      // Each event row records the synchronous_commit its transaction ran with.
      await schemas.admin.query(`
        CREATE TABLE "${schema}".seen (id text, sync text);
        CREATE FUNCTION "${schema}".note() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN INSERT INTO "${schema}".seen VALUES (NEW.id, current_setting('synchronous_commit'));
        RETURN NEW; END $$;
        CREATE TRIGGER note AFTER INSERT ON "${schema}".skein_events FOR EACH ROW
          EXECUTE FUNCTION "${schema}".note();`)
      await Promise.all([
        store.append('a', makeEnvelopes('a', 1, 1), { expectedSeq: 0, durability: 'deferred' }),
        store.append('b', makeEnvelopes('b', 1, 1), { expectedSeq: 0, durability: 'deferred' }),
      ])
      pool.texts.length = 0
      await store.flush()
      await store.flush() // nothing deferred since: no statement
      expect(pool.texts).toEqual(['SELECT pg_catalog.txid_current()'])
      await Promise.all([
        store.append('a', makeEnvelopes('a', 2, 1), { expectedSeq: 1, durability: 'deferred' }),
        store.append('c', makeEnvelopes('c', 1, 1), { expectedSeq: 0 }),
      ])
      pool.texts.length = 0
      await store.flush() // the durable group covered the deferred one
      expect(pool.texts).toEqual([])
      // A lone append to a run that exists takes one plain statement, deferred or not.
      await store.append('b', makeEnvelopes('b', 2, 1), { expectedSeq: 1, durability: 'deferred' })
      await store.append('c', makeEnvelopes('c', 2, 1), { expectedSeq: 1 })
      expect(appendCalls(pool.texts)).toBe(0)
      const stale = await store
        .append('c', makeEnvelopes('c', 2, 1), { expectedSeq: 1 })
        .catch((e) => e)
      expect(stale.details).toEqual({ runId: 'c', expectedSeq: 1, tail: 2 })
      const { rows } = await schemas.admin.query(
        `SELECT id, sync FROM "${schema}".seen ORDER BY id`,
      )
      expect(rows).toEqual([
        { id: 'a-e1', sync: 'off' },
        { id: 'a-e2', sync: 'on' },
        { id: 'b-e1', sync: 'off' },
        { id: 'b-e2', sync: 'off' },
        { id: 'c-e1', sync: 'on' },
        { id: 'c-e2', sync: 'on' },
      ])
    })

    it('leaves a pool it was handed open, and rejects calls once closed', async () => {
      const pool = new pg.Pool({ connectionString: PG_URL, max: 2 })
      const store = postgresStore({ pool }, { schema: schemas.next() })
      const pending = store.append('r1', makeEnvelopes('r1', 1, 1), { expectedSeq: 0 })
      await store.close()
      await pending
      await expect(store.read('r1')).rejects.toSatisfy(StoreError.is)
      await expect(store.snapshots.list('r1')).rejects.toSatisfy(StoreError.is)
      expect((await pool.query('SELECT 1 AS one')).rows).toEqual([{ one: 1 }])
      await pool.end()
    })

    it('names pg and the install command when the package is missing', () => {
      const missing = (id: string) => {
        throw Object.assign(new Error(`Cannot find module '${id}'`), { code: 'MODULE_NOT_FOUND' })
      }
      const error = (() => {
        try {
          postgresStore({ connectionString: PG_URL }, { driver: () => loadPg(missing) })
        } catch (e) {
          return e as any
        }
      })()
      expect(NotConfiguredError.is(error)).toBe(true)
      expect(error.message).toContain('npm install pg')
      expect(loadPg()).toBe(pg)
    })
  })
}
