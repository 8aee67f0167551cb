import { cloneJson } from '../../core/json.js'
import type { Snapshot, SnapshotStore } from '../../core/ports.js'

/**
 * Snapshots in process memory. `save` takes ownership of the data it is given (the caller
 * must not change it afterwards); `latest` hands out a private copy.
 */
export function memorySnapshotStore(): SnapshotStore {
  const byRun = new Map<string, Snapshot[]>()
  return {
    async save(snapshot) {
      const list = byRun.get(snapshot.runId) ?? []
      const at = list.findIndex((s) => s.seq >= snapshot.seq)
      if (at === -1) list.push(snapshot)
      else if (list[at].seq === snapshot.seq) list[at] = snapshot
      else list.splice(at, 0, snapshot)
      byRun.set(snapshot.runId, list)
    },
    async latest(runId, atOrBefore = Number.POSITIVE_INFINITY, options) {
      const list = byRun.get(runId)
      if (!list) return null
      for (let i = list.length - 1; i >= 0; i--) {
        if (list[i].seq > atOrBefore) continue
        return options?.readOnly ? list[i] : { ...list[i], data: cloneJson(list[i].data) }
      }
      return null
    },
    async list(runId) {
      return (byRun.get(runId) ?? []).map((s) => s.seq)
    },
    async prune(runId, keep) {
      const list = byRun.get(runId)
      if (!list || list.length <= keep) return 0
      const removed = list.length - Math.max(0, keep)
      if (removed === list.length) byRun.delete(runId)
      else byRun.set(runId, list.slice(removed))
      return removed
    },
  }
}
