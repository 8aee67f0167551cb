import { InvalidRequestError } from '../../core/errors.js'
import {
  appendFunction,
  appendFunctionNullSafe,
  appendFunctionWithLeases,
} from './append-function.js'
import { appendFunctionSetBased } from './append-function-sets.js'
import { deleteRunsFunction } from './delete-function.js'
import { flowAdmitAllMigration } from './flow-admit-all-migration.js'
import { flowControlsMigration, flowWindowsMigration } from './flow-controls-migration.js'
import { flowTakeMigration } from './flow-take-migration.js'
import { flowMigration } from './postgres-flow.js'

/** A validated Postgres schema name, and its quoted form for SQL text. */
export interface SchemaName {
  name: string
  /** `"name"`: safe to interpolate into SQL text. */
  sql: string
}

const SCHEMA_NAME = /^[a-z_][a-z0-9_$]{0,62}$/

/**
 * Schema names are interpolated into SQL (identifiers cannot be bound as parameters), so only
 * plain lower-case identifiers are accepted: nothing that needs quoting can slip through.
 */
export function schemaName(name: string): SchemaName {
  if (typeof name !== 'string' || !SCHEMA_NAME.test(name)) {
    throw new InvalidRequestError(
      `postgresStore: schema must be a lower-case Postgres identifier (letters, digits, _ and $, at most 63, not starting with a digit); got ${JSON.stringify(name)}`,
      { schema: typeof name === 'string' ? name : String(name) },
    )
  }
  return { name, sql: `"${name}"` }
}

/** Advisory lock class that orders event positions by commit (migration v4). */
const FEED_LOCK_CLASS = 0x736b66 // 'skf'

/**
 * A run attribute's value columns (str_value, num_value, is_bool) from the JSON value `a.value`
 * of `json_each(...) a`: the one rule the attribute index is written by, for the index trigger
 * and for a trimmed restore, which writes the rows itself (docs/operating-runs.md).
 */
export const ATTRIBUTE_COLUMNS = `        CASE json_typeof(a.value) WHEN 'string' THEN a.value #>> '{}' END,
        CASE json_typeof(a.value)
          WHEN 'number' THEN (a.value #>> '{}')::double precision
          WHEN 'boolean' THEN CASE WHEN (a.value #>> '{}')::boolean THEN 1 ELSE 0 END
        END,
        json_typeof(a.value) = 'boolean'`

/**
 * Schema migrations, in order; `skein_schema_version` records how many ran. Never edit a
 * shipped migration: append a new one, so every existing database upgrades the same way.
 *
 * Several hosts (docs/storage.md; migration 3): a lease is three columns on the run row (owner,
 * epoch, expiry) that `skein_append` already locks, so the epoch check joins the tail check;
 * due deadlines are claimed from the indexed `next_deadline_at` with `FOR UPDATE SKIP LOCKED`.
 */
const MIGRATIONS: ReadonlyArray<(s: string, channel: string) => string> = [
  (s) => `
  -- One row per run: the tail fences writers (it survives trimming), head is the first
  -- retained seq, and the meta columns are written in the same transaction as the append.
  -- fillfactor leaves room on each page, so the tail and meta updates of an append stay
  -- heap-only (no index writes) while the deadline is unchanged.
  CREATE TABLE ${s}.skein_runs (
    run_no bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    run_id text NOT NULL UNIQUE,
    head bigint NOT NULL DEFAULT 1,
    tail bigint NOT NULL DEFAULT 0,
    status text,
    kind text,
    definition_name text,
    definition_version text,
    created_at bigint,
    updated_at bigint,
    next_deadline_at bigint
  ) WITH (fillfactor = 80);
  CREATE INDEX skein_runs_deadline ON ${s}.skein_runs (next_deadline_at)
    WHERE next_deadline_at IS NOT NULL;

  -- Events in append order; payloads are JSON text, kept byte for byte (jsonb would reorder
  -- keys and refuses \\u0000). Cast payload::json to query them.
  CREATE TABLE ${s}.skein_events (
    run_no bigint NOT NULL,
    seq bigint NOT NULL,
    id text NOT NULL,
    ts bigint NOT NULL,
    type text NOT NULL,
    thread_id text,
    origin text NOT NULL,
    causation_id text,
    effect_id text,
    idempotency_key text,
    event_key text,
    payload text NOT NULL,
    PRIMARY KEY (run_no, seq)
  );

  -- Batch idempotency keys: unique per run, kept after trimming so a retried batch stays
  -- rejected.
  CREATE TABLE ${s}.skein_idempotency (
    run_no bigint NOT NULL,
    key text NOT NULL,
    seq bigint NOT NULL,
    PRIMARY KEY (run_no, key)
  );

  CREATE TABLE ${s}.skein_snapshots (
    run_id text NOT NULL,
    seq bigint NOT NULL,
    created_at bigint NOT NULL,
    format integer NOT NULL,
    data text NOT NULL,
    PRIMARY KEY (run_id, seq)
  );

  ${appendFunction(s)}
  `,
  (s) => `
  -- Paged summaries filtered by status walk this index in creation order (run_no desc); a
  -- status changes about twice per run, so appends that keep it stay heap-only updates.
  CREATE INDEX skein_runs_status ON ${s}.skein_runs (status, run_no);
  `,
  (s, channel) => `
  -- Run ownership (docs/storage.md): the lease is three columns on the run row skein_append already
  -- locks, so the claim is checked and written in the append's own statement. Epoch 0 and a
  -- null owner: never leased. None is indexed, so lease writes stay heap-only updates.
  ALTER TABLE ${s}.skein_runs ADD COLUMN lease_owner text,
    ADD COLUMN lease_epoch bigint NOT NULL DEFAULT 0,
    ADD COLUMN lease_expires_at bigint;
  ${appendFunctionWithLeases(s, channel)}
  `,
  // v4 (projectors): every event gets a position in commit order. A BEFORE INSERT statement
  // trigger takes a transaction-scoped advisory lock before the rows draw their positions,
  // so positions are drawn in the order transactions commit: a reader that sees position p
  // has seen every position below it (a plain sequence would let a later position commit
  // first, and a projector would skip the earlier one). Events already there are numbered
  // run by run (a run's order is all a projector relies on).
  (s) => `
  CREATE SEQUENCE ${s}.skein_feed_pos;
  ALTER TABLE ${s}.skein_events ADD COLUMN pos bigint;
  UPDATE ${s}.skein_events e SET pos = o.rn
    FROM (SELECT run_no, seq, row_number() OVER (ORDER BY run_no, seq) AS rn
      FROM ${s}.skein_events) o
    WHERE e.run_no = o.run_no AND e.seq = o.seq;
  PERFORM setval('${s}.skein_feed_pos',
    coalesce((SELECT max(pos) FROM ${s}.skein_events), 0) + 1, false);
  ALTER TABLE ${s}.skein_events ALTER COLUMN pos SET DEFAULT nextval('${s}.skein_feed_pos'),
    ALTER COLUMN pos SET NOT NULL;
  CREATE UNIQUE INDEX skein_events_pos ON ${s}.skein_events (pos);
  CREATE FUNCTION ${s}.skein_feed_order() RETURNS trigger LANGUAGE plpgsql AS $skein_feed$
  BEGIN
    PERFORM pg_advisory_xact_lock(${FEED_LOCK_CLASS}, hashtext(TG_TABLE_SCHEMA));
    RETURN NULL;
  END
  $skein_feed$;
  CREATE TRIGGER skein_events_feed_order BEFORE INSERT ON ${s}.skein_events
    FOR EACH STATEMENT EXECUTE FUNCTION ${s}.skein_feed_order();
  CREATE TABLE ${s}.skein_projectors (
    name text PRIMARY KEY,
    position bigint NOT NULL DEFAULT 0,
    owner text,
    expires_at bigint NOT NULL DEFAULT 0,
    updated_at bigint NOT NULL DEFAULT 0
  );
  `,
  // v5: skein_append's renewal check made null-safe (append-function.ts): every statement of
  // the claim rule then answers its table of cases alike (`describeLeaseStore`).
  (s, channel) => appendFunctionNullSafe(s, channel),
  // v6: named claims (ClaimStore, docs/storage.md): a keyed lease per name ('projector:<name>',
  // 'sweep:retention', …), taken and renewed by one upsert under the claim rule. expires_at = 0:
  // let go (owner and epoch kept, so the next take-over bumps the epoch).
  (s) => `
  CREATE TABLE ${s}.skein_claims (
    name text PRIMARY KEY,
    owner text NOT NULL,
    epoch bigint NOT NULL,
    expires_at bigint NOT NULL
  );
  -- A projector's claim is 'projector:<name>' here now; its checkpoint keeps the position.
  ALTER TABLE ${s}.skein_projectors DROP COLUMN owner, DROP COLUMN expires_at;
  `,
  // v7 (schedules, wait URLs; docs/schedules.md): one row per schedule, its definition and
  // progress as JSON text, found by when the ticker must look at it next; the ticker's
  // liveness mark; wait URL tokens by their SHA-256 (the token itself is never stored).
  (s) => `
  CREATE TABLE ${s}.skein_schedules (
    name text PRIMARY KEY,
    spec text NOT NULL,
    paused boolean NOT NULL DEFAULT false,
    wake_at bigint,
    state text NOT NULL,
    version bigint NOT NULL,
    created_at bigint NOT NULL,
    updated_at bigint NOT NULL
  );
  CREATE INDEX skein_schedules_wake ON ${s}.skein_schedules (wake_at)
    WHERE NOT paused AND wake_at IS NOT NULL;
  CREATE TABLE ${s}.skein_schedule_mark (
    id integer PRIMARY KEY CHECK (id = 1),
    at bigint NOT NULL
  );
  CREATE TABLE ${s}.skein_wait_urls (
    hash text PRIMARY KEY,
    token_id text NOT NULL,
    run_id text NOT NULL,
    thread_id text NOT NULL,
    wait_key text NOT NULL,
    expires_at bigint NOT NULL,
    options text NOT NULL,
    used_at bigint,
    created_at bigint NOT NULL
  );
  `,
  // v8: the companions' tables, created with the schema instead of when they open: the run
  // index (postgresRunIndex, docs/projectors.md) and the actor hosts' run registry
  // (postgresRegistry, docs/http.md). IF NOT EXISTS: before v8 each created its own.
  (s) => `
  CREATE TABLE IF NOT EXISTS ${s}.skein_run_index (
    run_id text PRIMARY KEY,
    kind text NOT NULL,
    definition_name text NOT NULL,
    definition_version text NOT NULL,
    status text NOT NULL,
    tenant text,
    created_at bigint NOT NULL,
    updated_at bigint NOT NULL,
    seq bigint NOT NULL
  );
  CREATE INDEX IF NOT EXISTS skein_run_index_created
    ON ${s}.skein_run_index (created_at DESC, run_id DESC);
  CREATE TABLE IF NOT EXISTS ${s}.skein_actor_runs (
    run_no bigserial PRIMARY KEY,
    run_id text NOT NULL UNIQUE,
    owner jsonb,
    kind text NOT NULL,
    definition_name text NOT NULL,
    definition_version text,
    created_at bigint NOT NULL,
    wake_at bigint
  );
  CREATE INDEX IF NOT EXISTS skein_actor_runs_wake ON ${s}.skein_actor_runs (wake_at)
    WHERE wake_at IS NOT NULL;
  `,
  // v9 (durable worker tasks; docs/workers.md): a task from its dispatch until a worker is
  // handed it, in queue order (position); claim_expires_at 0: nobody holds it. Claims skip
  // rows another host is claiming (FOR UPDATE SKIP LOCKED).
  (s) => `
  CREATE TABLE ${s}.skein_worker_tasks (
    run_id text NOT NULL,
    effect_id text NOT NULL,
    attempt integer NOT NULL,
    type text NOT NULL,
    body text NOT NULL,
    owner text,
    epoch bigint NOT NULL DEFAULT 0,
    claim_expires_at bigint NOT NULL DEFAULT 0,
    created_at bigint NOT NULL,
    position bigserial NOT NULL,
    PRIMARY KEY (run_id, effect_id, attempt)
  );
  CREATE INDEX skein_worker_tasks_free ON ${s}.skein_worker_tasks (claim_expires_at, position);
  `,
  // v10 (flow control; docs/flow-control.md): the queues and their admission function
  // (postgres-flow.ts).
  (s) => flowMigration(s),
  // v11 (data lifecycle; docs/data-lifecycle.md): a deleted run's record for projectors at a
  // feed position (drawn under the feed-order lock, as events are), kept until every projector
  // checkpoint passed it; wait-URL tokens found by run; and skein_delete_runs, the one
  // statement that deletes runs whole (delete-function.ts).
  (s) => `
  CREATE TABLE ${s}.skein_deletions (
    pos bigint PRIMARY KEY,
    run_id text NOT NULL,
    tail bigint NOT NULL,
    deleted_at bigint NOT NULL,
    reason text NOT NULL
  );
  CREATE INDEX skein_wait_urls_run ON ${s}.skein_wait_urls (run_id);
  ${deleteRunsFunction(s, FEED_LOCK_CLASS)}
  `,
  // v12: summaries filtered by definition (and status) walk this index in creation order.
  (s) => `
  CREATE INDEX skein_runs_definition ON ${s}.skein_runs (definition_name, status, run_no);
  `,
  // v13 (flow control's rate, singleton and debounce; docs/flow-control.md): rate admissions,
  // debounce windows, and the admission function that counts them (flow-controls-migration.ts).
  (s) => flowControlsMigration(s),
  // v14 (run attributes; docs/operating-runs.md, "Attributes"): one row per run and attribute
  // name, text in str_value (byte order: COLLATE "C"), numbers and booleans (1/0, is_bool) in
  // num_value, each indexed as (name, value, run_no): a value's runs in creation order. The
  // trigger keeps the rows in the append's transaction from the two events that set
  // attributes (null removes a name); a run's rows go with its row (the foreign key).
  (s) => `
  CREATE TABLE ${s}.skein_run_attributes (
    run_no bigint NOT NULL REFERENCES ${s}.skein_runs (run_no) ON DELETE CASCADE,
    name text NOT NULL,
    str_value text COLLATE "C",
    num_value double precision,
    is_bool boolean NOT NULL DEFAULT false,
    PRIMARY KEY (run_no, name)
  );
  CREATE INDEX skein_run_attributes_str ON ${s}.skein_run_attributes (name, str_value, run_no)
    WHERE str_value IS NOT NULL;
  CREATE INDEX skein_run_attributes_num ON ${s}.skein_run_attributes (name, num_value, run_no)
    WHERE num_value IS NOT NULL;
  CREATE FUNCTION ${s}.skein_index_attributes() RETURNS trigger LANGUAGE plpgsql AS $skein_attrs$
  DECLARE
    attrs json := NEW.payload::json -> 'attributes';
  BEGIN
    IF attrs IS NULL OR json_typeof(attrs) <> 'object' THEN RETURN NULL; END IF;
    DELETE FROM ${s}.skein_run_attributes WHERE run_no = NEW.run_no AND name IN
      (SELECT a.key FROM json_each(attrs) a WHERE json_typeof(a.value) = 'null');
    INSERT INTO ${s}.skein_run_attributes (run_no, name, str_value, num_value, is_bool)
      SELECT NEW.run_no, a.key,
${ATTRIBUTE_COLUMNS}
      FROM json_each(attrs) a WHERE json_typeof(a.value) IN ('string', 'number', 'boolean')
      ON CONFLICT (run_no, name) DO UPDATE SET str_value = EXCLUDED.str_value,
        num_value = EXCLUDED.num_value, is_bool = EXCLUDED.is_bool;
    RETURN NULL;
  END
  $skein_attrs$;
  CREATE TRIGGER skein_run_attributes_set AFTER INSERT ON ${s}.skein_events FOR EACH ROW
    WHEN (NEW.type IN ('runtime.run.started', 'runtime.run.attributes'))
    EXECUTE FUNCTION ${s}.skein_index_attributes();
  `,
  // v15 (flow control's debounce windows; docs/flow-control.md): a window goes with its run's
  // queue entry, and a start takes back its own run's window (flow-controls-migration.ts).
  (s) => flowWindowsMigration(s),
  // v16 (flow control; docs/flow-control.md): a batch of starts gathered for one key is
  // admitted in one round (flow-admit-all-migration.ts).
  (s) => flowAdmitAllMigration(s),
  // v17: skein_append takes the common group (every request writes, to a run no other request
  // names, without a key) set-based; migration 5's function stays as skein_append_each for the
  // rest (append-function-sets.ts).
  (s, channel) => appendFunctionSetBased(s, channel),
  // v18 (flow control; docs/flow-control.md): a new run takes its slot in its first append
  // (flow-take-migration.ts).
  (s) => flowTakeMigration(s),
]

export const SCHEMA_VERSION = MIGRATIONS.length

/**
 * The LISTEN/NOTIFY channel of a schema's appends (a channel name is at most 63 bytes; two
 * schemas sharing the first 57 characters share a channel, which costs only spare hints).
 */
export function notifyChannel(schema: SchemaName): string {
  return `skein/${schema.name.slice(0, 57)}`
}

/** SQLSTATE raised when the database holds a newer schema than this skein knows. */
export const NEWER_SCHEMA_SQLSTATE = 'SK001'

/** Advisory lock class for migrations (the second key is the schema name's hash). */
const MIGRATION_LOCK_CLASS = 0x736b6e // 'skn'

/**
 * One statement that brings `schema` up to `target` (default SCHEMA_VERSION): a DO block, so
 * it runs as one transaction through any driver's plain `query(text)`. It first takes a
 * transaction-scoped advisory lock for the schema, so processes starting at once migrate one
 * after the other (the later ones find the work done); a failure or crash mid-way leaves the
 * schema at its old version. A schema newer than this skein raises NEWER_SCHEMA_SQLSTATE.
 */
export function migrationSql(schema: SchemaName, target = SCHEMA_VERSION): string {
  const s = schema.sql
  const literal = `'${schema.name}'`
  const steps = MIGRATIONS.slice(0, target)
    .map((sql, i) => `IF current < ${i + 1} THEN ${sql(s, notifyChannel(schema))} END IF;`)
    .join('\n')
  return `DO $skein_migrate$
DECLARE current integer;
BEGIN
  PERFORM pg_advisory_xact_lock(${MIGRATION_LOCK_CLASS}, hashtext(${literal}));
  CREATE SCHEMA IF NOT EXISTS ${s};
  CREATE TABLE IF NOT EXISTS ${s}.skein_schema_version (
    version integer NOT NULL,
    applied_at timestamptz NOT NULL DEFAULT now()
  );
  SELECT coalesce(max(version), 0) INTO current FROM ${s}.skein_schema_version;
  IF current > ${SCHEMA_VERSION} THEN
    RAISE EXCEPTION USING ERRCODE = '${NEWER_SCHEMA_SQLSTATE}',
      MESSAGE = format('schema %s is at version %s, newer than this skein understands (${SCHEMA_VERSION}); upgrade skein to open it', ${literal}, current);
  END IF;
  ${steps}
  IF current < ${target} THEN
    INSERT INTO ${s}.skein_schema_version (version) VALUES (${target});
  END IF;
END
$skein_migrate$`
}
