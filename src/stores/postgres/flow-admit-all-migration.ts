import { FLOW_LOCK_SEED } from './flow-controls-migration.js'

const FINISHED = `('completed', 'failed', 'cancelled')`

/**
 * Migration 16 (flow control; docs/flow-control.md, "Across processes and hosts";
 * decisions.md, "A key's gathered starts are one admission round"): `skein_flow_admit_all`, the round of a
 * batch of starts gathered for one key. Under the key's transaction lock (the same lock as
 * `skein_flow_admit`, so rounds of both kinds on every host run one after another), it forgets
 * the key's finished entries once, queues every entry of the batch, counts the key's slots
 * once, and admits what they leave (and the rate, when the key has one) by priority and
 * queueing order, in one pass, instead of one full round per entry. Its rows are
 * `skein_flow_admit`'s (admitted runs, then the rate window's next admission).
 */
export function flowAdmitAllMigration(s: string): string {
  return `
  CREATE FUNCTION ${s}.skein_flow_admit_all(p_queue text, p_key text, p_limit integer,
      p_now bigint, p_hold bigint, e_runs text[], e_priorities double precision[],
      e_starts bigint[], e_enqueued bigint[], p_rate_limit integer, p_rate_period bigint)
  RETURNS TABLE (run_id text, existing text, retry_at bigint)
  LANGUAGE plpgsql AS $skein_flow_admit_all$
  #variable_conflict use_column
  DECLARE
    free integer;
    recent integer := 0;
    oldest bigint;
    taken integer;
  BEGIN
    PERFORM set_config('synchronous_commit', 'off', true);
    PERFORM pg_advisory_xact_lock(hashtextextended(p_queue || chr(10) || p_key, ${FLOW_LOCK_SEED}));
    WITH gone AS (
      DELETE FROM ${s}.skein_flow f USING ${s}.skein_flow g
        LEFT JOIN ${s}.skein_runs r ON r.run_id = g.run_id
        WHERE f.run_id = g.run_id AND g.queue = p_queue AND g.flow_key = p_key
          AND (r.status IN ${FINISHED}
            OR (r.status IS NULL AND g.admitted_at IS NOT NULL AND g.hold_until <= p_now))
        RETURNING f.run_id
    )
    DELETE FROM ${s}.skein_flow_debounce d USING gone WHERE d.run_id = gone.run_id;
    INSERT INTO ${s}.skein_flow (run_id, queue, flow_key, priority, start_at, enqueued_at)
      SELECT e.run_id, p_queue, p_key, e.priority, e.start_at, e.enqueued_at
        FROM unnest(e_runs, e_priorities, e_starts, e_enqueued) WITH ORDINALITY
          AS e(run_id, priority, start_at, enqueued_at, n)
        ORDER BY e.n
      ON CONFLICT (run_id) DO NOTHING;
    SELECT p_limit - count(*) INTO free FROM ${s}.skein_flow
      WHERE queue = p_queue AND flow_key = p_key AND admitted_at IS NOT NULL;
    IF p_rate_limit IS NOT NULL THEN
      DELETE FROM ${s}.skein_flow_rate WHERE queue = p_queue AND flow_key = p_key
        AND admitted_at <= p_now - greatest(2 * p_rate_period, 60000);
      SELECT count(*), min(admitted_at) INTO recent, oldest FROM ${s}.skein_flow_rate
        WHERE queue = p_queue AND flow_key = p_key AND admitted_at > p_now - p_rate_period;
      free := least(free, p_rate_limit - recent);
    END IF;
    taken := 0;
    IF free > 0 THEN
      RETURN QUERY
        WITH chosen AS (
          SELECT f.run_id, f.priority, f.seq FROM ${s}.skein_flow f
            LEFT JOIN ${s}.skein_runs r ON r.run_id = f.run_id
            WHERE f.queue = p_queue AND f.flow_key = p_key AND f.admitted_at IS NULL
              AND f.start_at <= p_now AND (r.status = 'queued' OR f.run_id = ANY (e_runs))
            ORDER BY f.priority DESC, f.seq LIMIT free
            FOR UPDATE OF f SKIP LOCKED
        ), marked AS (
          UPDATE ${s}.skein_flow f SET admitted_at = p_now, hold_until = p_hold
            FROM chosen WHERE f.run_id = chosen.run_id
            RETURNING f.run_id, chosen.priority, chosen.seq
        )
        SELECT marked.run_id, NULL::text, NULL::bigint FROM marked
          ORDER BY marked.priority DESC, marked.seq;
      GET DIAGNOSTICS taken = ROW_COUNT;
    END IF;
    IF p_rate_limit IS NULL THEN
      RETURN;
    END IF;
    INSERT INTO ${s}.skein_flow_rate (queue, flow_key, admitted_at)
      SELECT p_queue, p_key, p_now FROM generate_series(1, taken);
    IF recent + taken >= p_rate_limit THEN
      RETURN QUERY SELECT NULL::text, NULL::text, coalesce(oldest, p_now) + p_rate_period;
    END IF;
  END
  $skein_flow_admit_all$;
  `
}
