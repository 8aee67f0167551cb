/**
 * `skein_append`: one group commit in one statement (one round trip, one transaction through
 * any driver's plain `query`). Arguments are parallel arrays: one element per request (run id,
 * expected tail, idempotency key, event count, meta), then every request's events flattened in
 * request order (`e_req` names each event's request, 1-based), then buffered snapshots.
 *
 * Each request is checked in call order against its run's row (locked), so a conflict fails
 * only that request: it comes back as a row `(o_req, 'seq', tail)` or `(o_req, 'key')`.
 * Requests that pass write their row and key in the loop and their events in one INSERT at the
 * end. With `p_isolated`, each request writes inside its own exception block (a
 * subtransaction), so a failed write also fails only that request (`(o_req, 'error', detail)`);
 * the client uses it only to redo a group whose fast path raised.
 *
 * Locking order: rows of new runs are inserted, then every run row of the group is locked,
 * both in run_id order, so two processes' groups cannot deadlock on each other.
 * `p_relaxed` (every request deferred) commits with synchronous_commit off.
 */
export function appendFunction(s: string): string {
  return `
  CREATE FUNCTION ${s}.skein_append(
    p_run_ids text[], p_expected bigint[], p_keys text[], p_counts integer[], p_has_meta boolean[],
    p_status text[], p_kind text[], p_def_name text[], p_def_version text[],
    p_created bigint[], p_updated bigint[], p_deadline bigint[],
    e_req integer[], e_seq bigint[], e_id text[], e_ts bigint[], e_type text[], e_thread text[],
    e_origin text[], e_causation text[], e_effect text[], e_idem text[], e_key text[],
    e_payload text[],
    s_run text[], s_seq bigint[], s_created bigint[], s_format integer[], s_data text[],
    p_relaxed boolean, p_isolated boolean
  ) RETURNS TABLE (o_req integer, o_outcome text, o_tail bigint, o_detail text)
  LANGUAGE plpgsql AS $skein_append$
  DECLARE
    n integer := coalesce(array_length(p_run_ids, 1), 0);
    ok boolean[] := array_fill(false, ARRAY[n]);
    run_nos bigint[] := array_fill(NULL::bigint, ARRAY[n]);
    v_run_no bigint;
    v_tail bigint;
    v_new_tail bigint;
  BEGIN
    IF p_relaxed THEN
      PERFORM set_config('synchronous_commit', 'off', true);
    END IF;
    INSERT INTO ${s}.skein_runs (run_id)
      SELECT DISTINCT u.id FROM unnest(p_run_ids, p_expected, p_counts, p_has_meta)
        AS u(id, expected, count, has_meta)
      WHERE u.expected = 0 AND (u.count > 0 OR u.has_meta)
      ORDER BY u.id
      ON CONFLICT (run_id) DO NOTHING;
    PERFORM 1 FROM ${s}.skein_runs WHERE run_id = ANY (p_run_ids) ORDER BY run_id FOR UPDATE;
    FOR i IN 1 .. n LOOP
      v_run_no := NULL;
      v_tail := 0;
      SELECT r.run_no, r.tail INTO v_run_no, v_tail FROM ${s}.skein_runs r
        WHERE r.run_id = p_run_ids[i];
      v_tail := coalesce(v_tail, 0);
      IF v_tail <> p_expected[i] THEN
        o_req := i; o_outcome := 'seq'; o_tail := v_tail; o_detail := NULL;
        RETURN NEXT;
        CONTINUE;
      END IF;
      IF p_keys[i] IS NOT NULL AND v_run_no IS NOT NULL AND EXISTS (
        SELECT 1 FROM ${s}.skein_idempotency k WHERE k.run_no = v_run_no AND k.key = p_keys[i]
      ) THEN
        o_req := i; o_outcome := 'key'; o_tail := v_tail; o_detail := NULL;
        RETURN NEXT;
        CONTINUE;
      END IF;
      CONTINUE WHEN p_counts[i] = 0 AND NOT p_has_meta[i];
      v_new_tail := p_expected[i] + p_counts[i];
      IF NOT p_isolated THEN
        PERFORM ${s}.skein_write_run(v_run_no, v_new_tail, p_keys[i], p_has_meta[i],
          p_status[i], p_kind[i], p_def_name[i], p_def_version[i], p_created[i], p_updated[i],
          p_deadline[i]);
        ok[i] := true;
        run_nos[i] := v_run_no;
        CONTINUE;
      END IF;
      BEGIN
        PERFORM ${s}.skein_write_run(v_run_no, v_new_tail, p_keys[i], p_has_meta[i],
          p_status[i], p_kind[i], p_def_name[i], p_def_version[i], p_created[i], p_updated[i],
          p_deadline[i]);
        INSERT INTO ${s}.skein_events (run_no, seq, id, ts, type, thread_id, origin,
            causation_id, effect_id, idempotency_key, event_key, payload)
          SELECT v_run_no, u.seq, u.id, u.ts, u.type, u.thread, u.origin, u.causation, u.effect,
            u.idem, u.key, u.payload
          FROM unnest(e_req, e_seq, e_id, e_ts, e_type, e_thread, e_origin, e_causation,
            e_effect, e_idem, e_key, e_payload)
            AS u(req, seq, id, ts, type, thread, origin, causation, effect, idem, key, payload)
          WHERE u.req = i;
      EXCEPTION WHEN OTHERS THEN
        o_req := i; o_outcome := 'error'; o_tail := NULL; o_detail := SQLSTATE || ': ' || SQLERRM;
        RETURN NEXT;
      END;
    END LOOP;
    IF NOT p_isolated THEN
      INSERT INTO ${s}.skein_events (run_no, seq, id, ts, type, thread_id, origin,
          causation_id, effect_id, idempotency_key, event_key, payload)
        SELECT run_nos[u.req], u.seq, u.id, u.ts, u.type, u.thread, u.origin, u.causation,
          u.effect, u.idem, u.key, u.payload
        FROM unnest(e_req, e_seq, e_id, e_ts, e_type, e_thread, e_origin, e_causation,
          e_effect, e_idem, e_key, e_payload)
          AS u(req, seq, id, ts, type, thread, origin, causation, effect, idem, key, payload)
        WHERE ok[u.req];
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

  -- One request's run row and idempotency key (the tail, and the meta when it has one).
  CREATE FUNCTION ${s}.skein_write_run(
    p_run_no bigint, p_tail bigint, p_key text, p_has_meta boolean,
    p_status text, p_kind text, p_def_name text, p_def_version text,
    p_created bigint, p_updated bigint, p_deadline bigint
  ) RETURNS void LANGUAGE plpgsql AS $skein_write_run$
  BEGIN
    IF p_has_meta THEN
      UPDATE ${s}.skein_runs SET tail = p_tail, status = p_status, kind = p_kind,
        definition_name = p_def_name, definition_version = p_def_version,
        created_at = p_created, updated_at = p_updated, next_deadline_at = p_deadline
        WHERE run_no = p_run_no;
    ELSE
      UPDATE ${s}.skein_runs SET tail = p_tail WHERE run_no = p_run_no;
    END IF;
    IF p_key IS NOT NULL THEN
      INSERT INTO ${s}.skein_idempotency (run_no, key, seq) VALUES (p_run_no, p_key, p_tail);
    END IF;
  END
  $skein_write_run$;`
}
