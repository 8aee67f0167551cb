import type { Json } from '../core/json.js'

/** One run the host created (docs/operations.md, "Actor hosts and run registries"): who asked, what it runs, when. */
export interface RegisteredRun {
  runId: string
  /** The caller's identity from the authorize hook (`{ identity }`), or null without one. */
  owner: Json | null
  kind: string
  definitionName: string
  /** The version asked for; null when the start named none (the newest registered). */
  definitionVersion: string | null
  createdAt: number
}

export interface RegistryListOptions {
  cursor?: string
  limit?: number
  /** 'oldest' (default) or 'newest' first. */
  order?: 'oldest' | 'newest'
}

/** A page of `list`: pass `nextCursor` back as `cursor`; absent on the last page. */
export interface RegistryPage {
  runs: RegisteredRun[]
  nextCursor?: string
}

/**
 * Where an actor host records its runs (docs/operations.md, "Actor hosts and run registries": there is no global listing, so the
 * application keeps one) and where each closed cell's next deadline waits (procedure 4: after a
 * restart only the cells whose deadline is due, or that were open when the host stopped, are
 * opened). An app plugs in its own (a table of its database, a tenant service) by implementing
 * this; `sqliteRegistry` and `memoryRegistry` are the defaults.
 *
 * `wake` semantics: `null` means the run has no pending deadline; a number is the time (ms of
 * the host's clock) at which the host must have the cell open. The host sets it to the open time
 * while a cell is open (a crash leaves "open me" behind) and to the cell's next deadline when it
 * closes the cell.
 */
export interface RunRegistry {
  /** Records a new run; a second record of the same runId keeps the first (a retried start). */
  record(run: RegisteredRun): Promise<void>
  /** Forgets a run whose start was refused before anything was written. */
  forget(runId: string): Promise<void>
  /**
   * Records the version a run moved to (`migrateRun`, docs/deploys.md "Migrating runs"), so
   * run summaries filtered by version find it. A registry without it keeps the start's version:
   * a filter by the new version then misses the run.
   */
  setVersion?(runId: string, definitionVersion: string): Promise<void>
  /**
   * Known runs in the order they were recorded, oldest first (or newest first with `order:
   * 'newest'`), page by page (at most `limit`, default 100). Run summaries on an actor host
   * page through it and need the cursor to be the position of the page's last run (a positive
   * integer, as the shipped registries' are).
   */
  list(options?: RegistryListOptions): Promise<RegistryPage>
  /** Sets when the host must next open the run's cell (null: never by itself). */
  setWake(runId: string, at: number | null): Promise<void>
  /** Runs whose wake time is at or before `at`, earliest first, at most `limit`. */
  dueBy(at: number, limit: number): Promise<Array<{ runId: string; wakeAt: number }>>
  close?(): Promise<void>
}

/**
 * The registry in memory (an actor host without `dir`): as lasting as its memory cells.
 *
 * @example
 * const host = createActorHost({ modules, registry: memoryRegistry() })
 */
export function memoryRegistry(): RunRegistry {
  // Each run with its position (1, 2, …): the cursor of a page is its last run's position.
  const runs = new Map<string, { no: number; run: RegisteredRun }>()
  const wakes = new Map<string, number>()
  let recorded = 0
  return {
    async record(run) {
      if (runs.has(run.runId)) return
      runs.set(run.runId, { no: ++recorded, run: { ...run } })
      wakes.set(run.runId, run.createdAt)
    },
    async forget(runId) {
      runs.delete(runId)
      wakes.delete(runId)
    },
    async setVersion(runId, definitionVersion) {
      const entry = runs.get(runId)
      if (entry) entry.run = { ...entry.run, definitionVersion }
    },
    async list({ cursor, limit = 100, order = 'oldest' } = {}) {
      const after = cursor === undefined ? undefined : Number(cursor)
      const all = [...runs.values()]
      if (order === 'newest') all.reverse()
      const rest =
        after === undefined
          ? all
          : all.filter(({ no }) => (order === 'newest' ? no < after : no > after))
      const page = rest.slice(0, Math.max(1, limit))
      const list = page.map(({ run }) => run)
      const last = page.at(-1)
      return rest.length > page.length && last
        ? { runs: list, nextCursor: String(last.no) }
        : { runs: list }
    },
    async setWake(runId, at) {
      if (!runs.has(runId)) return
      if (at === null) wakes.delete(runId)
      else wakes.set(runId, at)
    },
    async dueBy(at, limit) {
      const due: Array<{ runId: string; wakeAt: number }> = []
      for (const [runId, wakeAt] of wakes) if (wakeAt <= at) due.push({ runId, wakeAt })
      return due.sort((a, b) => a.wakeAt - b.wakeAt).slice(0, limit)
    },
  }
}

/**
 * A run's registry columns, in table order (run_id, owner as JSON text, kind, definition name,
 * definition version, created_at): what the SQLite and Postgres registries insert.
 */
export function registryValues(
  run: RegisteredRun,
): [string, string | null, string, string, string | null, number] {
  return [
    run.runId,
    run.owner === null ? null : JSON.stringify(run.owner),
    run.kind,
    run.definitionName,
    run.definitionVersion,
    run.createdAt,
  ]
}

/** A cursor as the position to page after (oldest first) or before (newest first). */
export const positionAfter = (cursor: string | undefined): number => {
  const at = cursor === undefined ? 0 : Number(cursor)
  return Number.isFinite(at) ? at : 0
}
export const positionBefore = (cursor: string | undefined): number => {
  const at = cursor === undefined ? Number.MAX_SAFE_INTEGER : Number(cursor)
  return Number.isFinite(at) ? at : Number.MAX_SAFE_INTEGER
}
