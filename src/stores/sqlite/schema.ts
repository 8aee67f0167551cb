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
]

export const SCHEMA_VERSION = MIGRATIONS.length

/**
 * Brings the file up to SCHEMA_VERSION inside one IMMEDIATE transaction, so two processes
 * opening a fresh file at once cannot both migrate it.
 */
export function migrate(db: SqliteDatabase): void {
  db.transaction(() => {
    const current = db.pragma('user_version', { simple: true }) as number
    if (current > SCHEMA_VERSION) {
      throw new StoreError(
        `${db.name}: schema version ${current} is newer than this skein understands (${SCHEMA_VERSION}); upgrade skein to open it`,
        { path: db.name, schemaVersion: current, supported: SCHEMA_VERSION },
      )
    }
    for (let v = current; v < SCHEMA_VERSION; v++) db.exec(MIGRATIONS[v])
    if (current !== SCHEMA_VERSION) db.pragma(`user_version = ${SCHEMA_VERSION}`)
  }).immediate()
}
