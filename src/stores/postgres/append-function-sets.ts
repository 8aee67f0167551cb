/**
 * Migration 17's `skein_append`: the same arguments, result and outcomes as migration 5's
 * (append-function.ts), with the common group taken set-based instead of request by request.
 *
 * Migration 5's function checks each request in a PL/pgSQL loop (a dozen expressions per
 * request, each tens of microseconds) and writes a new run's row twice (an empty INSERT, then
 * the UPDATE that sets its tail, meta and lease). Most groups need neither: every request
 * writes something, to a run no other request of the group names, without an idempotency key.
 * For those this function
 *
 * - inserts each new run's row whole (tail, meta, lease; a claim on a run without a row passes
 *   when its epoch is above 0), in run_id order, skipping rows that exist;
 * - updates every other request's run in one statement whose WHERE is the tail check and the
 *   lease rule (`decideClaim`, core/claim-rule.ts, as migration 5 states it), after locking the
 *   rows in run_id order (so two processes' groups cannot deadlock);
 * - inserts the written requests' events in one statement, with one `pg_notify` per run;
 * - reports each request that matched nothing from its (locked, unchanged) row, the claim
 *   first, as migration 5 does: `(o_req, 'lease', stored epoch, stored owner)` or
 *   `(o_req, 'seq', tail)`.
 *
 * Any other group (a key, a run named twice, a request that writes nothing, or `p_isolated`)
 * goes to migration 5's function, kept as `skein_append_each`. Snapshots ride either way.
 */
export function appendFunctionSetBased(s: string, channel: string): string {
  const args = `p_run_ids, p_expected, p_keys, p_counts, p_status, p_kind, p_def_name,
        p_def_version, p_created, p_updated, p_deadline, p_lease_owner, p_lease_epoch,
        p_lease_expires, p_lease_now, p_events, s_run, s_seq, s_created, s_format, s_data,
        p_relaxed, p_isolated`
  const requests = `unnest(p_run_ids, p_expected, p_counts, p_status, p_lease_owner,
        p_lease_epoch, p_lease_expires, p_lease_now) WITH ORDINALITY
        AS u(id, expected, count, status, owner, epoch, expires, now, i)`
  const notify = (tail: string, id: string) =>
    `pg_notify('${channel}', CASE WHEN octet_length(${id}) < 7900
          THEN ${tail} || ' ' || ${id} ELSE '*' END)`
  return `
  ALTER FUNCTION ${s}.skein_append(text[], bigint[], text[], integer[], text[], text[], text[],
    text[], bigint[], bigint[], bigint[], text[], bigint[], bigint[], bigint[], json, text[],
    bigint[], bigint[], integer[], text[], boolean, boolean) RENAME TO skein_append_each;
  CREATE FUNCTION ${s}.skein_append(
    p_run_ids text[], p_expected bigint[], p_keys text[], p_counts integer[],
    p_status text[], p_kind text[], p_def_name text[], p_def_version text[],
    p_created bigint[], p_updated bigint[], p_deadline bigint[],
    p_lease_owner text[], p_lease_epoch bigint[], p_lease_expires bigint[], p_lease_now bigint[],
    p_events json,
    s_run text[], s_seq bigint[], s_created bigint[], s_format integer[], s_data text[],
    p_relaxed boolean, p_isolated boolean
  ) RETURNS TABLE (o_req integer, o_outcome text, o_tail bigint, o_detail text)
  LANGUAGE plpgsql AS $skein_append$
  DECLARE
    n integer := coalesce(array_length(p_run_ids, 1), 0);
    -- Written requests (1-based) and their runs' row numbers.
    w_reqs bigint[] := '{}';
    w_nos bigint[] := '{}';
    f_reqs bigint[] := '{}';
    f_nos bigint[] := '{}';
    v_set text;
  BEGIN
    IF p_isolated OR n = 0 OR cardinality(array_remove(p_keys, NULL)) > 0
      OR NOT (SELECT count(DISTINCT w.id) = n
          AND bool_and(w.count > 0 OR w.status IS NOT NULL OR w.owner IS NOT NULL)
        FROM unnest(p_run_ids, p_counts, p_status, p_lease_owner) AS w(id, count, status, owner)) THEN
      RETURN QUERY SELECT * FROM ${s}.skein_append_each(${args});
      RETURN;
    END IF;
    -- Assignments, not PERFORM (a simple expression skips the executor). Sequential scans off:
    -- this function's plans are cached per connection, maybe while a table is small.
    v_set := set_config('enable_seqscan', 'off', true);
    IF p_relaxed THEN
      v_set := set_config('synchronous_commit', 'off', true);
    END IF;
    IF 0 = ANY (p_expected) THEN
      WITH fresh AS (
        INSERT INTO ${s}.skein_runs AS r (run_id, tail, status, kind, definition_name,
            definition_version, created_at, updated_at, next_deadline_at, lease_owner,
            lease_epoch, lease_expires_at)
          SELECT u.id, u.count, u.status, p_kind[u.i], p_def_name[u.i], p_def_version[u.i],
            p_created[u.i], p_updated[u.i], p_deadline[u.i], u.owner,
            coalesce(u.epoch, 0), u.expires
          FROM ${requests}
          WHERE u.expected = 0 AND (u.owner IS NULL OR u.epoch > 0)
          ORDER BY u.id
          ON CONFLICT (run_id) DO NOTHING
          RETURNING r.run_id, r.run_no
      ) SELECT coalesce(array_agg(u.i), '{}'), coalesce(array_agg(fresh.run_no), '{}')
        INTO f_reqs, f_nos
        FROM fresh JOIN ${requests} ON u.id = fresh.run_id;
    END IF;
    IF coalesce(array_length(f_reqs, 1), 0) < n THEN
      WITH locked AS MATERIALIZED (
        SELECT r.run_no, r.run_id FROM ${s}.skein_runs r
        WHERE r.run_id = ANY (p_run_ids) AND r.run_no <> ALL (f_nos)
        ORDER BY r.run_id FOR NO KEY UPDATE
      ), written AS (
        UPDATE ${s}.skein_runs r SET tail = u.expected + u.count,
          status = CASE WHEN u.status IS NOT NULL THEN u.status ELSE r.status END,
          kind = CASE WHEN u.status IS NOT NULL THEN p_kind[u.i] ELSE r.kind END,
          definition_name = CASE WHEN u.status IS NOT NULL THEN p_def_name[u.i] ELSE r.definition_name END,
          definition_version = CASE WHEN u.status IS NOT NULL THEN p_def_version[u.i] ELSE r.definition_version END,
          created_at = CASE WHEN u.status IS NOT NULL THEN p_created[u.i] ELSE r.created_at END,
          updated_at = CASE WHEN u.status IS NOT NULL THEN p_updated[u.i] ELSE r.updated_at END,
          next_deadline_at = CASE WHEN u.status IS NOT NULL THEN p_deadline[u.i] ELSE r.next_deadline_at END,
          lease_owner = coalesce(u.owner, r.lease_owner),
          lease_epoch = CASE WHEN u.owner IS NOT NULL THEN u.epoch ELSE r.lease_epoch END,
          lease_expires_at = CASE WHEN u.owner IS NOT NULL THEN u.expires ELSE r.lease_expires_at END
        FROM locked, ${requests}
        WHERE r.run_no = locked.run_no AND locked.run_id = u.id AND r.tail = u.expected
          AND (u.owner IS NULL
            OR coalesce(r.lease_owner = u.owner AND r.lease_epoch = u.epoch, false)
            OR ((r.lease_owner IS NULL OR r.lease_expires_at <= u.now) AND u.epoch > r.lease_epoch))
        RETURNING u.i, r.run_no
      ) SELECT f_reqs || coalesce(array_agg(written.i), '{}'),
          f_nos || coalesce(array_agg(written.run_no), '{}')
        INTO w_reqs, w_nos FROM written;
    ELSE
      w_reqs := f_reqs;
      w_nos := f_nos;
    END IF;
    IF coalesce(array_length(w_reqs, 1), 0) > 0 THEN
      INSERT INTO ${s}.skein_events (run_no, seq, id, ts, type, thread_id, origin,
          causation_id, effect_id, idempotency_key, event_key, payload)
        SELECT w.run_no, e.s, e.id, e.ts, e.t, e.th, e.o, e.c, e.e, e.ik, e.k, e.p
        FROM json_to_recordset(p_events) AS e(r integer, s bigint, id text, ts bigint,
          t text, th text, o text, c text, e text, ik text, k text, p text)
        JOIN unnest(w_reqs, w_nos) AS w(r, run_no) ON w.r = e.r;
      -- One hint per written run with a tail (as migration 5).
      PERFORM ${notify('(p_expected[w.r] + p_counts[w.r])::text', 'p_run_ids[w.r]')}
        FROM unnest(w_reqs) AS w(r) WHERE p_expected[w.r] + p_counts[w.r] > 0;
    END IF;
    IF coalesce(array_length(w_reqs, 1), 0) < n THEN
      -- Requests that matched nothing, from their locked rows: the claim first, then the tail.
      RETURN QUERY SELECT u.i::integer,
          CASE WHEN u.owner IS NOT NULL AND NOT (CASE WHEN r.run_no IS NULL THEN u.epoch > 0
            ELSE coalesce(r.lease_owner = u.owner AND r.lease_epoch = u.epoch, false)
              OR ((r.lease_owner IS NULL OR r.lease_expires_at <= u.now)
                AND u.epoch > r.lease_epoch) END)
          THEN 'lease' ELSE 'seq' END,
          CASE WHEN u.owner IS NOT NULL AND NOT (CASE WHEN r.run_no IS NULL THEN u.epoch > 0
            ELSE coalesce(r.lease_owner = u.owner AND r.lease_epoch = u.epoch, false)
              OR ((r.lease_owner IS NULL OR r.lease_expires_at <= u.now)
                AND u.epoch > r.lease_epoch) END)
          THEN coalesce(r.lease_epoch, 0) ELSE coalesce(r.tail, 0) END,
          CASE WHEN u.owner IS NOT NULL AND NOT (CASE WHEN r.run_no IS NULL THEN u.epoch > 0
            ELSE coalesce(r.lease_owner = u.owner AND r.lease_epoch = u.epoch, false)
              OR ((r.lease_owner IS NULL OR r.lease_expires_at <= u.now)
                AND u.epoch > r.lease_epoch) END)
          THEN r.lease_owner END
        FROM ${requests}
        LEFT JOIN ${s}.skein_runs r ON r.run_id = u.id
        WHERE u.i <> ALL (w_reqs);
    END IF;
    IF coalesce(array_length(s_run, 1), 0) > 0 THEN
      -- Snapshots are a cache of the log: one that cannot be written never fails the appends.
      BEGIN
        INSERT INTO ${s}.skein_snapshots (run_id, seq, created_at, format, data)
          SELECT * FROM unnest(s_run, s_seq, s_created, s_format, s_data)
          ON CONFLICT (run_id, seq) DO UPDATE SET created_at = EXCLUDED.created_at,
            format = EXCLUDED.format, data = EXCLUDED.data;
      EXCEPTION WHEN OTHERS THEN
        o_req := 0; o_outcome := 'snapshots'; o_tail := NULL; o_detail := SQLSTATE || ': ' || SQLERRM;
        RETURN NEXT;
      END;
    END IF;
  END
  $skein_append$;
`
}
