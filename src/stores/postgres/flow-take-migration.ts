import { FLOW_LOCK_SEED } from './flow-controls-migration.js'

const FINISHED = `('completed', 'failed', 'cancelled')`

/**
 * Migration 18 (flow control; docs/flow-control.md, "Across processes and hosts"; decisions.md,
 * "A new run takes its flow slot in its first append"): `skein_flow_take`, the admissions a
 * group commit makes for the new runs it writes (`AppendOptions.admit`). It is an argument of
 * the group's `skein_append` call (`Statements.appendAdmitting`), so it runs first, in the same
 * statement and transaction: it takes the transaction lock of every key it admits in (the lock
 * `skein_flow_admit` takes, in one order on every host), forgets the key's finished entries,
 * and, when no run of the key waits (its log `queued`, its start due), records as admitted as
 * many of the group's new runs as the key's free slots allow, by priority then call order. It
 * returns the expected tails with -1 for each run it did not admit, which `skein_append` then
 * refuses as a tail conflict at tail 0 (nothing of it written); the client reads that as
 * FlowKeyFullError. The lock is held until the group commits, so the count is exact.
 *
 * `f_req` holds each admitting request's 1-based position in the group's arrays.
 */
export function flowTakeMigration(s: string): string {
  return `
  CREATE FUNCTION ${s}.skein_flow_take(p_expected bigint[], p_run_ids text[],
      f_req integer[], f_queue text[], f_key text[], f_limit integer[],
      f_priority double precision[], p_now bigint, p_hold bigint)
  RETURNS bigint[]
  LANGUAGE plpgsql AS $skein_flow_take$
  DECLARE
    expected bigint[] := p_expected;
    k record;
    r record;
    free integer;
  BEGIN
    FOR k IN SELECT x.q, x.k FROM unnest(f_queue, f_key) AS x(q, k) GROUP BY x.q, x.k
        ORDER BY x.q COLLATE "C", x.k COLLATE "C" LOOP
      PERFORM pg_advisory_xact_lock(hashtextextended(k.q || chr(10) || k.k, ${FLOW_LOCK_SEED}));
    END LOOP;
    FOR k IN SELECT x.q, x.k, max(x.lim) AS lim FROM unnest(f_queue, f_key, f_limit) AS x(q, k, lim)
        GROUP BY x.q, x.k LOOP
      DELETE FROM ${s}.skein_flow f USING ${s}.skein_flow g
        LEFT JOIN ${s}.skein_runs w ON w.run_id = g.run_id
        WHERE f.run_id = g.run_id AND g.queue = k.q AND g.flow_key = k.k
          AND (w.status IN ${FINISHED}
            OR (w.status IS NULL AND g.admitted_at IS NOT NULL AND g.hold_until <= p_now));
      IF EXISTS (SELECT 1 FROM ${s}.skein_flow f JOIN ${s}.skein_runs w ON w.run_id = f.run_id
          WHERE f.queue = k.q AND f.flow_key = k.k AND f.admitted_at IS NULL
            AND f.start_at <= p_now AND w.status = 'queued') THEN
        free := 0;
      ELSE
        SELECT k.lim - count(*) INTO free FROM ${s}.skein_flow f
          WHERE f.queue = k.q AND f.flow_key = k.k AND f.admitted_at IS NOT NULL;
      END IF;
      FOR r IN SELECT x.req, x.p FROM unnest(f_req, f_queue, f_key, f_priority)
          WITH ORDINALITY AS x(req, q, k, p, n)
          WHERE x.q = k.q AND x.k = k.k ORDER BY x.p DESC, x.n LOOP
        IF free > 0 THEN
          INSERT INTO ${s}.skein_flow (run_id, queue, flow_key, priority, start_at, enqueued_at,
              admitted_at, hold_until)
            VALUES (p_run_ids[r.req], k.q, k.k, r.p, p_now, p_now, p_now, p_hold)
            ON CONFLICT (run_id) DO NOTHING;
          IF FOUND THEN
            free := free - 1;
            CONTINUE;
          END IF;
        END IF;
        expected[r.req] := -1;
      END LOOP;
    END LOOP;
    RETURN expected;
  END
  $skein_flow_take$;
  `
}
