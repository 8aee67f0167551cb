import { defineProjector } from '../../core/projector.js'
import {
  decodeIndexCursor,
  encodeIndexCursor,
  indexEvents,
  indexLimit,
  type RunIndex,
  type RunIndexEntry,
  type RunIndexOptions,
} from '../../core/run-index.js'

/** Newest first: createdAt descending, then runId descending. */
export const indexOrder = (a: RunIndexEntry, b: RunIndexEntry): number =>
  b.createdAt - a.createdAt || (a.runId < b.runId ? 1 : a.runId > b.runId ? -1 : 0)

/**
 * The run index in memory (tests, and the memory store's companion). Its checkpoint lives in
 * the event store, so pair it only with a store that is lost with it (memoryStore).
 *
 * @example
 * const index = memoryRunIndex()
 * const engine = createEngine({ modules, projectors: [index.projector] })
 * const { runs } = await index.list({ status: 'failed' })
 */
export function memoryRunIndex(options: RunIndexOptions = {}): RunIndex {
  const rows = new Map<string, RunIndexEntry>()
  return {
    projector: defineProjector({
      name: options.name ?? 'run-index',
      handle({ runId, events }) {
        const entry = indexEvents(rows.get(runId), events, options.tenant)
        if (entry) rows.set(runId, entry)
        else rows.delete(runId)
      },
    }),
    async get(runId) {
      const row = rows.get(runId)
      return row ? { ...row } : null
    },
    async list(query = {}) {
      const limit = indexLimit(query)
      const after = query.cursor === undefined ? undefined : decodeIndexCursor(query.cursor)
      const all = [...rows.values()]
        .filter(
          (r) =>
            (query.status === undefined || r.status === query.status) &&
            (query.tenant === undefined || r.tenant === query.tenant) &&
            (after === undefined ||
              r.createdAt < after[0] ||
              (r.createdAt === after[0] && r.runId < after[1])),
        )
        .sort(indexOrder)
      const runs = all.slice(0, limit).map((r) => ({ ...r }))
      const last = runs[runs.length - 1]
      return {
        runs,
        nextCursor: all.length > limit ? encodeIndexCursor(last.createdAt, last.runId) : null,
      }
    },
  }
}
