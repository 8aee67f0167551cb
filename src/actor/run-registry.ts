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
  /** Known runs, oldest first, page by page (at most `limit`, default 100). */
  list(options?: { cursor?: string; limit?: number }): Promise<RegistryPage>
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
  const runs = new Map<string, RegisteredRun>()
  const wakes = new Map<string, number>()
  return {
    async record(run) {
      if (runs.has(run.runId)) return
      runs.set(run.runId, { ...run })
      wakes.set(run.runId, run.createdAt)
    },
    async forget(runId) {
      runs.delete(runId)
      wakes.delete(runId)
    },
    async list({ cursor, limit = 100 } = {}) {
      const all = [...runs.values()]
      const start = cursor === undefined ? 0 : Number(cursor)
      const page = all.slice(start, start + limit)
      const next = start + page.length
      return next < all.length ? { runs: page, nextCursor: String(next) } : { runs: page }
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
