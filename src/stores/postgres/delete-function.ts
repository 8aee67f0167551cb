/**
 * `skein_delete_runs` (migration v8, docs/data-lifecycle.md): deletes runs whole in one
 * statement, so in one transaction: by id (`p_ids`, waiting for a run's row lock), or a batch
 * of finished runs (`p_ids` null: each status in `p_statuses`, updated before `p_before`,
 * oldest first, at most `p_limit` in all, skipping rows an append holds locked). Only runs
 * whose status is in `p_statuses` (null: any) are deleted. Each run's events, idempotency keys,
 * snapshots, wait-URL tokens, worker tasks, flow-control entry, actor registry entry and row (meta and lease) go; each deletion is recorded in
 * skein_deletions at a feed position taken under the feed-order lock, taken last so appends
 * wait only for the records, not the deletes. Records every stored checkpoint passed go first.
 */
export function deleteRunsFunction(s: string, feedLockClass: number): string {
  const schema = `'${s.slice(1, -1)}'`
  return `
  CREATE FUNCTION ${s}.skein_delete_runs(p_ids text[], p_statuses text[], p_before bigint,
      p_limit integer, p_at bigint, p_reason text)
    RETURNS TABLE (deleted_run_id text, deleted_tail bigint, deleted_status text)
    LANGUAGE plpgsql AS $skein_delete$
  DECLARE
    victims record;
    one_status text;
    left_over integer := p_limit;
    nos bigint[] := '{}';
    ids text[] := '{}';
    tails bigint[] := '{}';
    statuses text[] := '{}';
  BEGIN
    IF p_ids IS NOT NULL THEN
      FOR victims IN SELECT r.run_no, r.run_id, r.tail, r.status FROM ${s}.skein_runs r
          WHERE r.run_id = ANY(p_ids) AND r.tail > 0
            AND (p_statuses IS NULL OR r.status = ANY(p_statuses))
          ORDER BY r.run_no FOR UPDATE LOOP
        nos := nos || victims.run_no; ids := ids || victims.run_id;
        tails := tails || victims.tail; statuses := statuses || victims.status;
      END LOOP;
    ELSE
      FOREACH one_status IN ARRAY p_statuses LOOP
        EXIT WHEN left_over <= 0;
        FOR victims IN SELECT r.run_no, r.run_id, r.tail, r.status FROM ${s}.skein_runs r
            WHERE r.status = one_status AND r.updated_at < p_before AND r.tail > 0
            ORDER BY r.run_no LIMIT left_over FOR UPDATE SKIP LOCKED LOOP
          nos := nos || victims.run_no; ids := ids || victims.run_id;
          tails := tails || victims.tail; statuses := statuses || victims.status;
          left_over := left_over - 1;
        END LOOP;
      END LOOP;
    END IF;
    IF cardinality(nos) = 0 THEN RETURN; END IF;
    DELETE FROM ${s}.skein_events WHERE run_no = ANY(nos);
    DELETE FROM ${s}.skein_idempotency WHERE run_no = ANY(nos);
    DELETE FROM ${s}.skein_snapshots WHERE run_id = ANY(ids);
    DELETE FROM ${s}.skein_wait_urls WHERE run_id = ANY(ids);
    DELETE FROM ${s}.skein_worker_tasks WHERE run_id = ANY(ids);
    DELETE FROM ${s}.skein_flow WHERE run_id = ANY(ids);
    DELETE FROM ${s}.skein_actor_runs WHERE run_id = ANY(ids);
    DELETE FROM ${s}.skein_runs WHERE run_no = ANY(nos);
    PERFORM pg_advisory_xact_lock(${feedLockClass}, hashtext(${schema}));
    DELETE FROM ${s}.skein_deletions WHERE pos <= coalesce(
      (SELECT min(position) FROM ${s}.skein_projectors),
      (SELECT max(pos) FROM ${s}.skein_deletions));
    INSERT INTO ${s}.skein_deletions (pos, run_id, tail, deleted_at, reason)
      SELECT nextval('${s}.skein_feed_pos'), d.id, d.tail, p_at, p_reason
      FROM unnest(ids, tails) WITH ORDINALITY AS d(id, tail, n) ORDER BY d.n;
    RETURN QUERY SELECT d.id, d.tail, d.status FROM unnest(ids, tails, statuses) AS d(id, tail, status);
  END
  $skein_delete$;`
}
