import { StoreError } from '../../core/errors.js'
import type { SqliteDatabase } from './driver.js'

/**
 * Schema migrations, applied in order; `PRAGMA user_version` records how many ran. Never edit
 * a shipped migration: append a new one, so every existing file upgrades the same way.
 */
const MIGRATIONS: readonly string[] = [
  `
  -- One row per run: the tail fences writers (it survives trimming), head is the first
  -- retained seq, and the meta columns are written in the same transaction as the append.
  CREATE TABLE skein_runs (
    run_id TEXT PRIMARY KEY,
    head INTEGER NOT NULL DEFAULT 1,
    tail INTEGER NOT NULL DEFAULT 0,
    status TEXT,
    kind TEXT,
    definition_name TEXT,
    definition_version TEXT,
    created_at INTEGER,
    updated_at INTEGER,
    next_deadline_at INTEGER
  );
  CREATE INDEX skein_runs_deadline ON skein_runs (next_deadline_at)
    WHERE next_deadline_at IS NOT NULL;

  CREATE TABLE skein_events (
    run_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    id TEXT NOT NULL,
    ts INTEGER NOT NULL,
    type TEXT NOT NULL,
    thread_id TEXT,
    origin TEXT NOT NULL,
    causation_id TEXT,
    effect_id TEXT,
    idempotency_key TEXT,
    event_key TEXT,
    payload TEXT NOT NULL,
    PRIMARY KEY (run_id, seq)
  ) WITHOUT ROWID;

  -- Batch idempotency keys: unique per run, kept after trimming so a retried batch stays
  -- rejected.
  CREATE TABLE skein_idempotency (
    run_id TEXT NOT NULL,
    key TEXT NOT NULL,
    seq INTEGER NOT NULL,
    PRIMARY KEY (run_id, key)
  ) WITHOUT ROWID;

  CREATE TABLE skein_snapshots (
    run_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    created_at INTEGER NOT NULL,
    format INTEGER NOT NULL,
    data TEXT NOT NULL,
    PRIMARY KEY (run_id, seq)
  ) WITHOUT ROWID;
  `,
  `
  -- v2: events are stored in append order (a rowid table) and found through a small
  -- (run_no, seq) index, and runs get a stable integer key. Concurrent runs' events then land
  -- on a few adjacent pages per commit instead of one page per run (half the WAL frames).
  CREATE TABLE skein_runs_v2 (
    run_no INTEGER PRIMARY KEY,
    run_id TEXT NOT NULL UNIQUE,
    head INTEGER NOT NULL DEFAULT 1,
    tail INTEGER NOT NULL DEFAULT 0,
    status TEXT,
    kind TEXT,
    definition_name TEXT,
    definition_version TEXT,
    created_at INTEGER,
    updated_at INTEGER,
    next_deadline_at INTEGER
  );
  INSERT INTO skein_runs_v2 (run_id, head, tail, status, kind, definition_name,
      definition_version, created_at, updated_at, next_deadline_at)
    SELECT run_id, head, tail, status, kind, definition_name, definition_version, created_at,
      updated_at, next_deadline_at
    FROM skein_runs ORDER BY rowid;
  -- Every logged run has a runs row; should one be missing, its events are kept all the same.
  INSERT INTO skein_runs_v2 (run_id, head, tail)
    SELECT run_id, min(seq), max(seq) FROM skein_events
    WHERE run_id NOT IN (SELECT run_id FROM skein_runs) GROUP BY run_id;
  CREATE TABLE skein_events_v2 (
    run_no INTEGER NOT NULL,
    seq INTEGER NOT NULL,
    id TEXT NOT NULL,
    ts INTEGER NOT NULL,
    type TEXT NOT NULL,
    thread_id TEXT,
    origin TEXT NOT NULL,
    causation_id TEXT,
    effect_id TEXT,
    idempotency_key TEXT,
    event_key TEXT,
    payload TEXT NOT NULL
  );
  INSERT INTO skein_events_v2 (run_no, seq, id, ts, type, thread_id, origin, causation_id,
      effect_id, idempotency_key, event_key, payload)
    SELECT r.run_no, e.seq, e.id, e.ts, e.type, e.thread_id, e.origin, e.causation_id,
      e.effect_id, e.idempotency_key, e.event_key, e.payload
    FROM skein_events e JOIN skein_runs_v2 r ON r.run_id = e.run_id
    ORDER BY r.run_no, e.seq;
  DROP TABLE skein_events;
  DROP TABLE skein_runs;
  ALTER TABLE skein_runs_v2 RENAME TO skein_runs;
  ALTER TABLE skein_events_v2 RENAME TO skein_events;
  CREATE UNIQUE INDEX skein_events_run_seq ON skein_events (run_no, seq);
  CREATE INDEX skein_runs_deadline ON skein_runs (next_deadline_at)
    WHERE next_deadline_at IS NOT NULL;
  `,
  `
  -- v3: a page of summaries filtered by status reads only that status's runs, newest first
  -- (an index holds the rowid, run_no, so it is ordered by (status, run_no)).
  CREATE INDEX skein_runs_status ON skein_runs (status);
  `,
  `
  -- v4: the run's lease (docs/storage.md), on the row every append updates anyway, so
  -- taking or renewing it with an append writes no other page. lease_expires_at = 0: released.
  ALTER TABLE skein_runs ADD COLUMN lease_owner TEXT;
  ALTER TABLE skein_runs ADD COLUMN lease_epoch INTEGER NOT NULL DEFAULT 0;
  ALTER TABLE skein_runs ADD COLUMN lease_expires_at INTEGER;
  `,
  `
  -- v5 (projectors): every event gets a position in commit order that is never reused (an
  -- AUTOINCREMENT rowid alias: a plain rowid may be renumbered by VACUUM or reused after the
  -- newest row is trimmed), and each projector a checkpoint with a claim.
  CREATE TABLE skein_events_v4 (
    pos INTEGER PRIMARY KEY AUTOINCREMENT,
    run_no INTEGER NOT NULL,
    seq INTEGER NOT NULL,
    id TEXT NOT NULL,
    ts INTEGER NOT NULL,
    type TEXT NOT NULL,
    thread_id TEXT,
    origin TEXT NOT NULL,
    causation_id TEXT,
    effect_id TEXT,
    idempotency_key TEXT,
    event_key TEXT,
    payload TEXT NOT NULL
  );
  INSERT INTO skein_events_v4 (run_no, seq, id, ts, type, thread_id, origin, causation_id,
      effect_id, idempotency_key, event_key, payload)
    SELECT run_no, seq, id, ts, type, thread_id, origin, causation_id, effect_id,
      idempotency_key, event_key, payload
    FROM skein_events ORDER BY rowid;
  DROP TABLE skein_events;
  ALTER TABLE skein_events_v4 RENAME TO skein_events;
  CREATE UNIQUE INDEX skein_events_run_seq ON skein_events (run_no, seq);
  CREATE TABLE skein_projectors (
    name TEXT PRIMARY KEY,
    position INTEGER NOT NULL DEFAULT 0,
    owner TEXT,
    expires_at INTEGER NOT NULL DEFAULT 0,
    updated_at INTEGER NOT NULL DEFAULT 0
  );
  `,
  `
  -- v6: named claims (ClaimStore, docs/storage.md): a keyed lease per name ('projector:<name>',
  -- 'sweep:retention', …), taken and renewed by one statement under the claim rule.
  -- expires_at = 0: let go (owner and epoch kept, so the next take-over bumps the epoch).
  CREATE TABLE skein_claims (
    name TEXT PRIMARY KEY,
    owner TEXT NOT NULL,
    epoch INTEGER NOT NULL,
    expires_at INTEGER NOT NULL
  ) WITHOUT ROWID;
  -- A projector's claim is 'projector:<name>' here now; its checkpoint keeps the position.
  ALTER TABLE skein_projectors DROP COLUMN owner;
  ALTER TABLE skein_projectors DROP COLUMN expires_at;
  `,
  `
  -- v7 (schedules, wait URLs; docs/schedules.md): one row per schedule, its definition and
  -- progress as JSON, found by when the ticker must look at it next; the ticker's liveness
  -- mark; wait URL tokens by their SHA-256 (the token itself is never stored).
  CREATE TABLE skein_schedules (
    name TEXT PRIMARY KEY,
    spec TEXT NOT NULL,
    paused INTEGER NOT NULL DEFAULT 0,
    wake_at INTEGER,
    state TEXT NOT NULL,
    version INTEGER NOT NULL,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
  );
  CREATE INDEX skein_schedules_wake ON skein_schedules (wake_at)
    WHERE paused = 0 AND wake_at IS NOT NULL;
  CREATE TABLE skein_schedule_mark (id INTEGER PRIMARY KEY CHECK (id = 1), at INTEGER NOT NULL);
  CREATE TABLE skein_wait_urls (
    hash TEXT PRIMARY KEY,
    token_id TEXT NOT NULL,
    run_id TEXT NOT NULL,
    thread_id TEXT NOT NULL,
    wait_key TEXT NOT NULL,
    expires_at INTEGER NOT NULL,
    options TEXT NOT NULL,
    used_at INTEGER,
    created_at INTEGER NOT NULL
  ) WITHOUT ROWID;
  `,
  `
  -- v8: the run index (sqliteRunIndex, docs/projectors.md): one row per run, written by its
  -- projector. IF NOT EXISTS: before v8 the index created its table when it opened.
  CREATE TABLE IF NOT EXISTS skein_run_index (
    run_id TEXT PRIMARY KEY,
    kind TEXT NOT NULL,
    definition_name TEXT NOT NULL,
    definition_version TEXT NOT NULL,
    status TEXT NOT NULL,
    tenant TEXT,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    seq INTEGER NOT NULL
  );
  CREATE INDEX IF NOT EXISTS skein_run_index_created
    ON skein_run_index (created_at DESC, run_id DESC);
  `,
  `
  -- v9 (durable worker tasks; docs/workers.md): a task from its dispatch until a worker is
  -- handed it, in queue order (position); claim_expires_at 0: nobody holds it.
  CREATE TABLE skein_worker_tasks (
    position INTEGER PRIMARY KEY,
    run_id TEXT NOT NULL,
    effect_id TEXT NOT NULL,
    attempt INTEGER NOT NULL,
    type TEXT NOT NULL,
    body TEXT NOT NULL,
    owner TEXT,
    epoch INTEGER NOT NULL DEFAULT 0,
    claim_expires_at INTEGER NOT NULL DEFAULT 0,
    created_at INTEGER NOT NULL
  );
  CREATE UNIQUE INDEX skein_worker_tasks_key ON skein_worker_tasks (run_id, effect_id, attempt);
  CREATE INDEX skein_worker_tasks_free ON skein_worker_tasks (claim_expires_at, position);
  `,
  `
  -- v10 (flow control; docs/flow-control.md): one row per run that waits for admission or
  -- holds a slot, in queueing order (seq). A slot is an admitted row whose run has not
  -- finished (skein_runs.status), so the commit that ends a run frees it.
  CREATE TABLE skein_flow (
    seq INTEGER PRIMARY KEY,
    run_id TEXT NOT NULL UNIQUE,
    queue TEXT NOT NULL,
    flow_key TEXT NOT NULL,
    priority INTEGER NOT NULL,
    start_at INTEGER NOT NULL,
    enqueued_at INTEGER NOT NULL,
    admitted_at INTEGER,
    hold_until INTEGER NOT NULL DEFAULT 0
  );
  CREATE INDEX skein_flow_key ON skein_flow (queue, flow_key, admitted_at);
  CREATE INDEX skein_flow_waiting ON skein_flow (start_at) WHERE admitted_at IS NULL;
  `,
  `
  -- v11 (data lifecycle; docs/data-lifecycle.md): a deleted run's record for projectors, at a
  -- feed position drawn from the events' AUTOINCREMENT sequence (no event ever gets it), kept
  -- until every projector checkpoint passed it; wait-URL tokens found by run to be deleted.
  CREATE TABLE skein_deletions (
    pos INTEGER PRIMARY KEY,
    run_id TEXT NOT NULL,
    tail INTEGER NOT NULL,
    deleted_at INTEGER NOT NULL,
    reason TEXT NOT NULL
  );
  CREATE INDEX skein_wait_urls_run ON skein_wait_urls (run_id);
  `,
  `
  -- v12: summaries filtered by definition (and status) read only that definition's entries,
  -- in creation order (the index holds the rowid, run_no): "failed runs of order".
  CREATE INDEX skein_runs_definition ON skein_runs (definition_name, status);
  `,
  `
  -- v13 (flow control's rate and debounce; docs/flow-control.md): each admission of a
  -- rate-limited key at its admission time (kept a minute at least), and each debounce window:
  -- its run, its key, the last input of its starts and when it opened.
  CREATE TABLE skein_flow_rate (
    queue TEXT NOT NULL,
    flow_key TEXT NOT NULL,
    admitted_at INTEGER NOT NULL
  );
  CREATE INDEX skein_flow_rate_key ON skein_flow_rate (queue, flow_key, admitted_at);
  CREATE TABLE skein_flow_debounce (
    run_id TEXT PRIMARY KEY,
    queue TEXT NOT NULL,
    debounce_key TEXT NOT NULL,
    input TEXT NOT NULL,
    opened_at INTEGER NOT NULL
  );
  CREATE INDEX skein_flow_debounce_key ON skein_flow_debounce (queue, debounce_key);
  -- v14 (run attributes; docs/operating-runs.md, "Attributes"): one row per run and attribute
  -- name. value has no declared type, so numbers stay numbers and text stays text (booleans
  -- are 1/0, is_bool says which). (name, value, run_no) finds a value's runs in creation
  -- order. The trigger keeps the rows in the append's own transaction from the two events
  -- that set attributes (the start's and runtime.run.attributes; null removes a name); a
  -- run's rows go with its row.
  CREATE TABLE skein_run_attributes (
    run_no INTEGER NOT NULL,
    name TEXT NOT NULL,
    value NOT NULL,
    is_bool INTEGER NOT NULL,
    PRIMARY KEY (run_no, name)
  ) WITHOUT ROWID;
  CREATE INDEX skein_run_attributes_value ON skein_run_attributes (name, value, run_no);
  CREATE TRIGGER skein_run_attributes_set AFTER INSERT ON skein_events
    WHEN NEW.type IN ('runtime.run.started', 'runtime.run.attributes')
  BEGIN
    DELETE FROM skein_run_attributes WHERE run_no = NEW.run_no AND name IN
      (SELECT key FROM json_each(NEW.payload, '$.attributes') WHERE type = 'null');
    INSERT INTO skein_run_attributes (run_no, name, value, is_bool)
      SELECT NEW.run_no, key, atom, type IN ('true', 'false')
      FROM json_each(NEW.payload, '$.attributes') WHERE type IN ('true', 'false', 'integer', 'real', 'text')
      ON CONFLICT (run_no, name) DO UPDATE SET value = excluded.value, is_bool = excluded.is_bool;
  END;
  CREATE TRIGGER skein_run_attributes_drop AFTER DELETE ON skein_runs
  BEGIN
    DELETE FROM skein_run_attributes WHERE run_no = OLD.run_no;
  END;
  `,
  `
  -- user_version 14: snapshots in a rowid table, (run_id, seq) unique. A WITHOUT ROWID table keeps the
  -- whole row in its key, so a snapshot (about a kilobyte and up) overflowed its page and every
  -- step of a lookup read the overflow again: a read cost 2.5x and a write 4.5x what they cost
  -- here (decisions.md, "Snapshots live in a rowid table on SQLite").
  CREATE TABLE skein_snapshots_v15 (
    run_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    created_at INTEGER NOT NULL,
    format INTEGER NOT NULL,
    data TEXT NOT NULL,
    UNIQUE (run_id, seq)
  );
  INSERT INTO skein_snapshots_v15 (run_id, seq, created_at, format, data)
    SELECT run_id, seq, created_at, format, data FROM skein_snapshots ORDER BY run_id, seq;
  DROP TABLE skein_snapshots;
  ALTER TABLE skein_snapshots_v15 RENAME TO skein_snapshots;
  `,
  `
  -- user_version 15: event positions without AUTOINCREMENT (decisions.md, "SQLite event
  -- positions without AUTOINCREMENT"): every commit rewrote sqlite_sequence's page. SQLite
  -- draws a new position as the highest + 1; a keeper row (run_no 0, no run's) holds the
  -- highest position ever given when its event was trimmed or deleted, or a deletion record
  -- took it (kept-position.ts).
  -- Positions are copied as they are: projector checkpoints stay valid.
  CREATE TABLE skein_events_next (
    pos INTEGER PRIMARY KEY,
    run_no INTEGER NOT NULL,
    seq INTEGER NOT NULL,
    id TEXT NOT NULL,
    ts INTEGER NOT NULL,
    type TEXT NOT NULL,
    thread_id TEXT,
    origin TEXT NOT NULL,
    causation_id TEXT,
    effect_id TEXT,
    idempotency_key TEXT,
    event_key TEXT,
    payload TEXT NOT NULL
  );
  INSERT INTO skein_events_next (pos, run_no, seq, id, ts, type, thread_id, origin,
      causation_id, effect_id, idempotency_key, event_key, payload)
    SELECT pos, run_no, seq, id, ts, type, thread_id, origin, causation_id, effect_id,
      idempotency_key, event_key, payload
    FROM skein_events ORDER BY pos;
  INSERT INTO skein_events_next (pos, run_no, seq, id, ts, type, origin, payload)
    SELECT seq, 0, seq, '', 0, '', '', '' FROM sqlite_sequence
    WHERE name = 'skein_events' AND seq > (SELECT coalesce(max(pos), 0) FROM skein_events);
  DROP TABLE skein_events;
  ALTER TABLE skein_events_next RENAME TO skein_events;
  -- Dropping the old table dropped its index and trigger: both again as written before (the
  -- index by v5, the run attributes' trigger by the v13 entry's "v14 run attributes"), unchanged.
  CREATE UNIQUE INDEX skein_events_run_seq ON skein_events (run_no, seq);
  CREATE TRIGGER skein_run_attributes_set AFTER INSERT ON skein_events
    WHEN NEW.type IN ('runtime.run.started', 'runtime.run.attributes')
  BEGIN
    DELETE FROM skein_run_attributes WHERE run_no = NEW.run_no AND name IN
      (SELECT key FROM json_each(NEW.payload, '$.attributes') WHERE type = 'null');
    INSERT INTO skein_run_attributes (run_no, name, value, is_bool)
      SELECT NEW.run_no, key, atom, type IN ('true', 'false')
      FROM json_each(NEW.payload, '$.attributes') WHERE type IN ('true', 'false', 'integer', 'real', 'text')
      ON CONFLICT (run_no, name) DO UPDATE SET value = excluded.value, is_bool = excluded.is_bool;
  END;
  `,
  `
  -- user_version 16: the store writes skein_run_attributes itself, with the trigger's two
  -- statements, for the events that carry attributes (run-attributes.ts): the trigger ran its
  -- program for every event inserted (decisions.md, "SQLite run attributes are written by the
  -- store, not a trigger").
  DROP TRIGGER skein_run_attributes_set;
  `,
]

export const SCHEMA_VERSION = MIGRATIONS.length

/** Told before an existing file is upgraded (never for a new file): upgrades copy every event. */
export type OnUpgrade = (upgrade: { path: string; from: number; to: number }) => void

/**
 * Brings the file up to `target` (default SCHEMA_VERSION) inside one IMMEDIATE transaction,
 * so two processes opening a fresh file at once cannot both migrate it, and a crash
 * mid-migration leaves the file at its old version. Tests pass a lower target to build an
 * old-version file.
 */
export function migrate(
  db: SqliteDatabase,
  options: { target?: number; onUpgrade?: OnUpgrade } = {},
): void {
  applyMigrations(db, MIGRATIONS, options)
}

/**
 * Applies `migrations` (a file's numbered list: the store's, or a companion file's such as an
 * actor host's registry) up to `target`, recording the count in `PRAGMA user_version`.
 */
export function applyMigrations(
  db: SqliteDatabase,
  migrations: readonly string[],
  { target = migrations.length, onUpgrade }: { target?: number; onUpgrade?: OnUpgrade } = {},
): void {
  const latest = migrations.length
  // A file at the target version needs no transaction (most opens: an actor host opens a
  // cell's file for each cold request). Only a migration writes, and it rechecks inside one.
  if (target === latest && db.pragma('user_version', { simple: true }) === target) return
  db.transaction(() => {
    const current = db.pragma('user_version', { simple: true }) as number
    if (current > latest) {
      throw new StoreError(
        `${db.name}: schema version ${current} is newer than this skein understands (${latest}); upgrade skein to open it`,
        { path: db.name, schemaVersion: current, supported: latest },
      )
    }
    if (current > 0 && current < target) onUpgrade?.({ path: db.name, from: current, to: target })
    for (let v = current; v < target; v++) db.exec(migrations[v])
    if (current < target) db.pragma(`user_version = ${target}`)
  }).immediate()
}
