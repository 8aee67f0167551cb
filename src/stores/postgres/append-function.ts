/**
 * `skein_append`: one group commit in one statement (one round trip, one transaction through
 * any driver's plain `query`). Arguments: parallel arrays with one element per request (run
 * id, expected tail, idempotency key, event count, meta: a null status means none; from
 * migration 3 a lease claim: `p_lease_owner` null means none); every request's events as one
 * JSON array of `{ r: request (1-based), s: seq, id, ts, t: type, th: thread, o: origin,
 * c: causation, e: effect, ik: idempotency key, k: key, p: payload as JSON text }` (a string,
 * so a payload's \u0000 stays an escape: Postgres text cannot hold NUL); then buffered
 * snapshots.
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
 *
 * Migration 3 (run ownership, docs/storage.md) replaces migration 1's function with the same text
 * plus, per request, a lease claim checked against the run's locked row and written with the
 * tail and meta, and a `pg_notify` per written run. A claim passes when the row's lease is held
 * by the same owner and epoch (a renewal), or is free (never taken, released, or expired at
 * the claim's `now`) and the claim's epoch is greater than the stored one (a take-over): the
 * rule of `decideClaim` (core/claim-rule.ts), restated in SQL below and held to its cases by
 * `describeLeaseStore` (a keyed append, or a group, goes through this function). It is
 * checked before the tail: a writer that lost the run hears LEASE_LOST, not a seq conflict it
 * would retry. A refused claim comes back as `(o_req, 'lease', stored epoch, stored owner)` and
 * writes nothing of that request. Claims of one group on one run see each other (the group
 * moves the lease as it moves the tail). The notification is a hint for other processes
 * (subscribe, wake-ups): channel `notifyChannel(schema)`, payload `<tail> <run id>` (`*` when
 * the run id is too long for a payload: the listener then polls); Postgres delivers it at
 * commit, to sessions listening then.
 *
 * Both migrations are generated here from one text; test/stores/postgres-append-function.test.ts
 * pins what each generates, so a shipped migration cannot change by accident.
 */
export function appendFunction(s: string): string {
  return skeinAppend(s, undefined)
}

/** Migration 3's `skein_append`: migration 1's, plus lease claims and change notifications. */
export function appendFunctionWithLeases(s: string, channel: string): string {
  return `
  DROP FUNCTION ${s}.skein_append(text[], bigint[], text[], integer[], text[], text[], text[],
    text[], bigint[], bigint[], bigint[], json, text[], bigint[], bigint[], integer[], text[],
    boolean, boolean);${skeinAppend(s, channel, false)}`
}

/**
 * Migration 5's `skein_append`: migration 3's with a renewal check that cannot be NULL. On a run
 * row never leased (owner NULL) migration 3's `owner = claimant AND ...` is NULL, and `NOT (NULL
 * OR false)` let a claim at epoch 0 through, which `decideClaim` refuses as stale (the engine
 * never claims epoch 0, so no log was written that way; the claim rule's table found it).
 */
export function appendFunctionNullSafe(s: string, channel: string): string {
  return skeinAppend(s, channel, true).replace('CREATE FUNCTION', 'CREATE OR REPLACE FUNCTION')
}

/**
 * The function's text; `channel` set: with leases and notifications (migration 3), `nullSafe`:
 * the renewal check of migration 5.
 */
function skeinAppend(s: string, channel: string | undefined, nullSafe = false): string {
  const leases = channel !== undefined
  /** `text` only with leases. */
  const L = (text: string) => (leases ? text : '')
  const notifyRun = (tail: string, id: string) =>
    `v_set := pg_notify('${channel}', CASE WHEN octet_length(${id}) < 7900
            THEN ${tail} || ' ' || ${id} ELSE '*' END);`
  return `
  CREATE FUNCTION ${s}.skein_append(
    p_run_ids text[], p_expected bigint[], p_keys text[], p_counts integer[],
    p_status text[], p_kind text[], p_def_name text[], p_def_version text[],
    p_created bigint[], p_updated bigint[], p_deadline bigint[],${L(`
    p_lease_owner text[], p_lease_epoch bigint[], p_lease_expires bigint[], p_lease_now bigint[],`)}
    p_events json,
    s_run text[], s_seq bigint[], s_created bigint[], s_format integer[], s_data text[],
    p_relaxed boolean, p_isolated boolean
  ) RETURNS TABLE (o_req integer, o_outcome text, o_tail bigint, o_detail text)
  LANGUAGE plpgsql AS $skein_append$
  DECLARE
    n integer := coalesce(array_length(p_run_ids, 1), 0);
    -- Per request: passed its checks, its run's row number, its new tail.
    ok boolean[] := array_fill(false, ARRAY[n]);
    req_run_no bigint[] := array_fill(NULL::bigint, ARRAY[n]);
    req_tail bigint[] := array_fill(NULL::bigint, ARRAY[n]);
    -- Per locked run (run_id order): row number, tail (and lease) as the group moves them, the
    -- last request that wrote it, the last one with meta (and the last one with a claim).
    l_ids text[];
    l_nos bigint[];
    l_tails bigint[];${L(`
    l_owners text[];
    l_epochs bigint[];
    l_expires bigint[];`)}
    l_last integer[];
    l_meta integer[];${L(`
    l_claim integer[];`)}
    j integer;
    v_tail bigint;
    v_set text;
    has_keys boolean := false;
  BEGIN
    -- Assignments, not PERFORM: a simple expression skips the executor (each statement here
    -- costs tens of microseconds, the whole call a few hundred).
    IF p_relaxed THEN
      v_set := set_config('synchronous_commit', 'off', true);
    END IF;
    -- Plans of this function are cached per connection, maybe while a table is small: with
    -- sequential scans off they are index lookups at any size (the setting ends with the
    -- transaction, which is this statement's own).
    v_set := set_config('enable_seqscan', 'off', true);
    IF 0 = ANY (p_expected) THEN
      INSERT INTO ${s}.skein_runs (run_id)
        SELECT DISTINCT u.id FROM unnest(p_run_ids, p_expected, p_counts, p_status${L(', p_lease_owner')})
          AS u(id, expected, count, status${L(', owner')})
        WHERE u.expected = 0 AND (u.count > 0 OR u.status IS NOT NULL${L(' OR u.owner IS NOT NULL')})
        ORDER BY u.id
        ON CONFLICT (run_id) DO NOTHING;
    END IF;
    SELECT coalesce(array_agg(x.run_id ORDER BY x.run_id), '{}'),
        coalesce(array_agg(x.run_no ORDER BY x.run_id), '{}'),
        coalesce(array_agg(x.tail ORDER BY x.run_id), '{}')${L(`,
        coalesce(array_agg(x.lease_owner ORDER BY x.run_id), '{}'),
        coalesce(array_agg(x.lease_epoch ORDER BY x.run_id), '{}'),
        coalesce(array_agg(x.lease_expires_at ORDER BY x.run_id), '{}')`)}
      INTO l_ids, l_nos, l_tails${L(', l_owners, l_epochs, l_expires')}
      FROM (SELECT r.run_id, r.run_no, r.tail${leases ? ', r.lease_owner, r.lease_epoch, r.lease_expires_at\n       ' : ''} FROM ${s}.skein_runs r
        WHERE r.run_id = ANY (p_run_ids) ORDER BY r.run_id FOR NO KEY UPDATE) x;
    l_last := array_fill(0, ARRAY[coalesce(array_length(l_ids, 1), 0)]);
    l_meta := l_last;${L(`
    l_claim := l_last;`)}
    FOR i IN 1 .. n LOOP
      j := array_position(l_ids, p_run_ids[i]);${L(`
      IF p_lease_owner[i] IS NOT NULL AND NOT (
        CASE WHEN j IS NULL THEN p_lease_epoch[i] > 0
        ELSE ${nullSafe ? 'coalesce(' : '('}l_owners[j] = p_lease_owner[i] AND l_epochs[j] = p_lease_epoch[i]${nullSafe ? ', false)' : ')'}
          OR ((l_owners[j] IS NULL OR l_expires[j] <= p_lease_now[i])
            AND p_lease_epoch[i] > l_epochs[j])
        END
      ) THEN
        o_req := i; o_outcome := 'lease';
        o_tail := CASE WHEN j IS NULL THEN 0 ELSE l_epochs[j] END;
        o_detail := CASE WHEN j IS NULL THEN NULL ELSE l_owners[j] END;
        RETURN NEXT;
        CONTINUE;
      END IF;`)}
      v_tail := CASE WHEN j IS NULL THEN 0 ELSE l_tails[j] END;
      IF v_tail <> p_expected[i] THEN
        o_req := i; o_outcome := 'seq'; o_tail := v_tail; o_detail := NULL;
        RETURN NEXT;
        CONTINUE;
      END IF;
      IF p_keys[i] IS NOT NULL AND j IS NOT NULL AND (
        EXISTS (SELECT 1 FROM ${s}.skein_idempotency k
          WHERE k.run_no = l_nos[j] AND k.key = p_keys[i])
        OR EXISTS (SELECT 1 FROM generate_subscripts(p_run_ids, 1) e
          WHERE e < i AND ok[e] AND p_run_ids[e] = p_run_ids[i] AND p_keys[e] = p_keys[i])
      ) THEN
        o_req := i; o_outcome := 'key'; o_tail := v_tail; o_detail := NULL;
        RETURN NEXT;
        CONTINUE;
      END IF;
      ${
        leases
          ? `CONTINUE WHEN j IS NULL OR (p_counts[i] = 0 AND p_status[i] IS NULL
        AND p_lease_owner[i] IS NULL);`
          : 'CONTINUE WHEN p_counts[i] = 0 AND p_status[i] IS NULL;'
      }
      IF p_isolated THEN
        BEGIN
          UPDATE ${s}.skein_runs SET tail = p_expected[i] + p_counts[i],
            status = CASE WHEN p_status[i] IS NOT NULL THEN p_status[i] ELSE status END,
            kind = CASE WHEN p_status[i] IS NOT NULL THEN p_kind[i] ELSE kind END,
            definition_name = CASE WHEN p_status[i] IS NOT NULL THEN p_def_name[i] ELSE definition_name END,
            definition_version = CASE WHEN p_status[i] IS NOT NULL THEN p_def_version[i] ELSE definition_version END,
            created_at = CASE WHEN p_status[i] IS NOT NULL THEN p_created[i] ELSE created_at END,
            updated_at = CASE WHEN p_status[i] IS NOT NULL THEN p_updated[i] ELSE updated_at END,
            next_deadline_at = CASE WHEN p_status[i] IS NOT NULL THEN p_deadline[i] ELSE next_deadline_at END${L(`,
            lease_owner = coalesce(p_lease_owner[i], lease_owner),
            lease_epoch = CASE WHEN p_lease_owner[i] IS NOT NULL THEN p_lease_epoch[i] ELSE lease_epoch END,
            lease_expires_at = CASE WHEN p_lease_owner[i] IS NOT NULL THEN p_lease_expires[i] ELSE lease_expires_at END`)}
            WHERE run_no = l_nos[j];
          IF p_keys[i] IS NOT NULL THEN
            INSERT INTO ${s}.skein_idempotency (run_no, key, seq)
              VALUES (l_nos[j], p_keys[i], p_expected[i] + p_counts[i]);
          END IF;
          INSERT INTO ${s}.skein_events (run_no, seq, id, ts, type, thread_id, origin,
              causation_id, effect_id, idempotency_key, event_key, payload)
            SELECT l_nos[j], u.s, u.id, u.ts, u.t, u.th, u.o, u.c, u.e, u.ik, u.k, u.p
            FROM json_to_recordset(p_events) AS u(r integer, s bigint, id text, ts bigint,
              t text, th text, o text, c text, e text, ik text, k text, p text)
            WHERE u.r = i;
          l_tails[j] := p_expected[i] + p_counts[i];${L(`
          IF p_lease_owner[i] IS NOT NULL THEN
            l_owners[j] := p_lease_owner[i];
            l_epochs[j] := p_lease_epoch[i];
            l_expires[j] := p_lease_expires[i];
          END IF;
          IF p_counts[i] > 0 THEN
            ${notifyRun('l_tails[j]', 'p_run_ids[i]')}
          END IF;`)}
        EXCEPTION WHEN OTHERS THEN
          o_req := i; o_outcome := 'error'; o_tail := NULL; o_detail := SQLSTATE || ': ' || SQLERRM;
          RETURN NEXT;
        END;
        CONTINUE;
      END IF;
      l_tails[j] := p_expected[i] + p_counts[i];${L(`
      IF p_lease_owner[i] IS NOT NULL THEN
        l_owners[j] := p_lease_owner[i];
        l_epochs[j] := p_lease_epoch[i];
        l_expires[j] := p_lease_expires[i];
        l_claim[j] := i;
      END IF;`)}
      ok[i] := true;
      has_keys := has_keys OR p_keys[i] IS NOT NULL;
      req_run_no[i] := l_nos[j];
      req_tail[i] := l_tails[j];
      l_last[j] := i;
      IF p_status[i] IS NOT NULL THEN
        l_meta[j] := i;
      END IF;
    END LOOP;
    IF NOT p_isolated THEN
      -- Each written run once, with its last tail and its last meta (l_meta 0: keep it).
      UPDATE ${s}.skein_runs r SET tail = l_tails[w.x],
          status = CASE WHEN w.m > 0 THEN p_status[w.m] ELSE r.status END,
          kind = CASE WHEN w.m > 0 THEN p_kind[w.m] ELSE r.kind END,
          definition_name = CASE WHEN w.m > 0 THEN p_def_name[w.m] ELSE r.definition_name END,
          definition_version = CASE WHEN w.m > 0 THEN p_def_version[w.m] ELSE r.definition_version END,
          created_at = CASE WHEN w.m > 0 THEN p_created[w.m] ELSE r.created_at END,
          updated_at = CASE WHEN w.m > 0 THEN p_updated[w.m] ELSE r.updated_at END,
          next_deadline_at = CASE WHEN w.m > 0 THEN p_deadline[w.m] ELSE r.next_deadline_at END${L(`,
          lease_owner = CASE WHEN w.c > 0 THEN l_owners[w.x] ELSE r.lease_owner END,
          lease_epoch = CASE WHEN w.c > 0 THEN l_epochs[w.x] ELSE r.lease_epoch END,
          lease_expires_at = CASE WHEN w.c > 0 THEN l_expires[w.x] ELSE r.lease_expires_at END`)}
        FROM (SELECT array_position(l_nos, r2.run_no) AS x, r2.run_no,
            l_meta[array_position(l_nos, r2.run_no)] AS m${L(`,
            l_claim[array_position(l_nos, r2.run_no)] AS c`)}
          FROM ${s}.skein_runs r2 WHERE r2.run_no = ANY (l_nos)) w
        WHERE r.run_no = w.run_no AND l_last[w.x] > 0;
      IF has_keys THEN
        INSERT INTO ${s}.skein_idempotency (run_no, key, seq)
          SELECT req_run_no[x], p_keys[x], req_tail[x] FROM generate_subscripts(p_run_ids, 1) x
          WHERE ok[x] AND p_keys[x] IS NOT NULL;
      END IF;
      INSERT INTO ${s}.skein_events (run_no, seq, id, ts, type, thread_id, origin,
          causation_id, effect_id, idempotency_key, event_key, payload)
        SELECT req_run_no[u.r], u.s, u.id, u.ts, u.t, u.th, u.o, u.c, u.e, u.ik, u.k, u.p
        FROM json_to_recordset(p_events) AS u(r integer, s bigint, id text, ts bigint,
          t text, th text, o text, c text, e text, ik text, k text, p text)
        WHERE ok[u.r];${L(`
      -- One hint per run that got events (identical payloads in a transaction fold into one).
      FOR x IN 1 .. coalesce(array_length(l_ids, 1), 0) LOOP
        IF l_last[x] > 0 AND l_tails[x] > 0 THEN
          ${notifyRun('l_tails[x]', 'l_ids[x]')}
        END IF;
      END LOOP;`)}
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
