/** Seed of the transaction lock that serializes one key's admissions (`skein_flow_admit`). */
export const FLOW_LOCK_SEED = 0x736b666c // 'skfl'
/** Seed of the transaction lock that serializes one debounce key's starts. */
const DEBOUNCE_LOCK_SEED = 0x736b6462 // 'skdb'

const FINISHED = `('completed', 'failed', 'cancelled')`

/**
 * Migration 13 (flow control's rate, singleton and debounce; docs/flow-control.md).
 *
 * `skein_flow_rate` records each admission of a rate-limited key at its admission time (kept a
 * minute at least); `skein_flow_admit` (replacing migration 10's) counts those after
 * `now - period` under the key's transaction lock and admits no more than the rate leaves,
 * answering when the window admits again; with `p_skip` (singleton `skip`) it queues nothing
 * when the key has a live run (queued, admitted and not finished, or queued or admitted by a
 * start still writing its log, within its hold) and answers that run. Rows it returns: an admitted run
 * (`run_id`), the live run a skip found (`existing`), or the window's next admission
 * (`retry_at`).
 *
 * `skein_flow_debounce` holds each debounce window: its run, key, last input and opening time.
 * `skein_flow_debounce_start` joins a key's open window (its run's entry not admitted, its log
 * queued or still being written), locking that entry so no round admits it meanwhile (a round
 * takes its rows `FOR UPDATE SKIP LOCKED`), or opens one; under a transaction lock on the
 * debounce key, so every host joins the same window.
 */
export function flowControlsMigration(s: string): string {
  return `
  CREATE TABLE ${s}.skein_flow_rate (
    queue text NOT NULL,
    flow_key text NOT NULL,
    admitted_at bigint NOT NULL
  );
  CREATE INDEX skein_flow_rate_key ON ${s}.skein_flow_rate (queue, flow_key, admitted_at);
  CREATE TABLE ${s}.skein_flow_debounce (
    run_id text PRIMARY KEY,
    queue text NOT NULL,
    debounce_key text NOT NULL,
    input text NOT NULL,
    opened_at bigint NOT NULL
  );
  CREATE INDEX skein_flow_debounce_key ON ${s}.skein_flow_debounce (queue, debounce_key);
  DROP FUNCTION ${s}.skein_flow_admit(text, text, integer, bigint, bigint, text,
    double precision, bigint, bigint);
  CREATE FUNCTION ${s}.skein_flow_admit(p_queue text, p_key text, p_limit integer,
      p_now bigint, p_hold bigint, e_run text, e_priority double precision, e_start bigint,
      e_enqueued bigint, p_rate_limit integer, p_rate_period bigint, p_skip boolean)
  RETURNS TABLE (run_id text, existing text, retry_at bigint)
  LANGUAGE plpgsql AS $skein_flow_admit$
  #variable_conflict use_column
  DECLARE
    free integer;
    live text;
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
    IF e_run IS NOT NULL AND p_skip THEN
      SELECT f.run_id INTO live FROM ${s}.skein_flow f
        LEFT JOIN ${s}.skein_runs r ON r.run_id = f.run_id
        WHERE f.queue = p_queue AND f.flow_key = p_key AND f.run_id <> e_run
          AND (r.status NOT IN ${FINISHED} OR (r.status IS NULL AND (f.hold_until > p_now
            OR (f.admitted_at IS NULL AND f.enqueued_at > 2 * p_now - p_hold))))
        ORDER BY f.seq LIMIT 1;
      IF live IS NOT NULL THEN
        RETURN QUERY SELECT NULL::text, live, NULL::bigint;
        RETURN;
      END IF;
    END IF;
    IF e_run IS NOT NULL THEN
      INSERT INTO ${s}.skein_flow (run_id, queue, flow_key, priority, start_at, enqueued_at)
        VALUES (e_run, p_queue, p_key, e_priority, e_start, e_enqueued)
        ON CONFLICT (run_id) DO NOTHING;
    END IF;
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
              AND f.start_at <= p_now AND (r.status = 'queued' OR f.run_id = e_run)
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
  $skein_flow_admit$;
  ${debounceStartFunction(s, 'CREATE', false)}
  `
}

/**
 * `skein_flow_debounce_start` (see `flowControlsMigration`). With `ownWindowFirst` (migration
 * 15), a start whose run already has an open window of the key (a retry of a start that died
 * before writing its run's log, or the sweep starting that run: flow-admission.ts) takes that
 * window back: its input becomes the start's, its end moves as a join's would, and the start
 * writes the run's log (`opened`).
 */
export function debounceStartFunction(
  s: string,
  verb: 'CREATE' | 'CREATE OR REPLACE',
  ownWindowFirst: boolean,
): string {
  const ends = `ends := CASE WHEN p_max_wait IS NULL THEN p_now + p_period
        ELSE least(p_now + p_period, w_opened + p_max_wait) END;`
  const ownWindow = `
    SELECT d.opened_at INTO w_opened FROM ${s}.skein_flow_debounce d
      JOIN ${s}.skein_flow f ON f.run_id = d.run_id
      WHERE d.run_id = e_run AND d.queue = p_queue AND d.debounce_key = p_key
        AND f.admitted_at IS NULL
      FOR UPDATE OF f;
    IF FOUND THEN
      ${ends}
      UPDATE ${s}.skein_flow_debounce SET input = p_input WHERE skein_flow_debounce.run_id = e_run;
      UPDATE ${s}.skein_flow SET start_at = ends WHERE skein_flow.run_id = e_run;
      RETURN QUERY SELECT e_run, true, ends;
      RETURN;
    END IF;`
  return `
  ${verb} FUNCTION ${s}.skein_flow_debounce_start(p_queue text, p_key text, e_run text,
      e_flow_key text, e_priority double precision, p_now bigint, p_input text,
      p_period bigint, p_max_wait bigint, p_abandoned bigint)
  RETURNS TABLE (run_id text, opened boolean, ends_at bigint)
  LANGUAGE plpgsql AS $skein_flow_debounce_start$
  #variable_conflict use_column
  DECLARE
    w_run text;
    w_opened bigint;
    ends bigint;
  BEGIN
    PERFORM pg_advisory_xact_lock(
      hashtextextended(p_queue || chr(10) || p_key, ${DEBOUNCE_LOCK_SEED}));${ownWindowFirst ? ownWindow : ''}
    DELETE FROM ${s}.skein_flow_debounce d
      WHERE d.queue = p_queue AND d.debounce_key = p_key AND (
        NOT EXISTS (SELECT 1 FROM ${s}.skein_flow f WHERE f.run_id = d.run_id)
        OR EXISTS (SELECT 1 FROM ${s}.skein_runs r
          WHERE r.run_id = d.run_id AND r.status <> 'queued'));
    SELECT d.run_id, d.opened_at INTO w_run, w_opened FROM ${s}.skein_flow_debounce d
      JOIN ${s}.skein_flow f ON f.run_id = d.run_id
      LEFT JOIN ${s}.skein_runs r ON r.run_id = d.run_id
      WHERE d.queue = p_queue AND d.debounce_key = p_key AND f.admitted_at IS NULL
        AND (r.status = 'queued' OR (r.status IS NULL AND f.enqueued_at > p_abandoned))
      LIMIT 1 FOR UPDATE OF f;
    IF w_run IS NOT NULL THEN
      ${ends}
      UPDATE ${s}.skein_flow_debounce SET input = p_input WHERE skein_flow_debounce.run_id = w_run;
      UPDATE ${s}.skein_flow SET start_at = ends WHERE skein_flow.run_id = w_run;
      RETURN QUERY SELECT w_run, false, ends;
      RETURN;
    END IF;
    ends := least(p_now + p_period, p_now + coalesce(p_max_wait, p_period));
    INSERT INTO ${s}.skein_flow (run_id, queue, flow_key, priority, start_at, enqueued_at)
      VALUES (e_run, p_queue, e_flow_key, e_priority, ends, p_now)
      ON CONFLICT (run_id) DO NOTHING;
    INSERT INTO ${s}.skein_flow_debounce (run_id, queue, debounce_key, input, opened_at)
      VALUES (e_run, p_queue, p_key, p_input, p_now) ON CONFLICT (run_id) DO NOTHING;
    RETURN QUERY SELECT e_run, true, ends;
  END
  $skein_flow_debounce_start$;`
}

/**
 * Migration 15 (flow control's debounce windows; docs/flow-control.md): a window goes with its
 * run's queue entry (a foreign key, `ON DELETE CASCADE`: deleting a run leaves no window), and
 * a start takes back its own run's open window (`debounceStartFunction`), so the sweep can
 * start the run of a window whose start died before writing its log.
 */
export function flowWindowsMigration(s: string): string {
  return `
  DELETE FROM ${s}.skein_flow_debounce d
    WHERE NOT EXISTS (SELECT 1 FROM ${s}.skein_flow f WHERE f.run_id = d.run_id);
  ALTER TABLE ${s}.skein_flow_debounce ADD CONSTRAINT skein_flow_debounce_entry
    FOREIGN KEY (run_id) REFERENCES ${s}.skein_flow (run_id) ON DELETE CASCADE;
  ${debounceStartFunction(s, 'CREATE OR REPLACE', true)}
  `
}
