import type { StoredWorkerTask, WorkerTaskKey, WorkerTaskStore } from '../../core/ports.js'
import { hintListeners } from '../shared/hint-listeners.js'

const keyOf = (key: WorkerTaskKey) => `${key.runId}\u0000${key.effectId}\u0000${key.attempt}`
const copy = (stored: StoredWorkerTask): StoredWorkerTask => ({
  ...stored,
  task: { ...stored.task },
})

/** Worker tasks of one process (the memory store, and an engine whose store has none). */
export function memoryWorkerTasks(): WorkerTaskStore & { forgetRun(runId: string): void } {
  // A Map keeps insertion order: the queue's order.
  const tasks = new Map<string, StoredWorkerTask>()
  const free = (stored: StoredWorkerTask, now: number) => stored.claimExpiresAt <= now
  const hints = hintListeners()
  return {
    /** A deleted run's tasks go (docs/data-lifecycle.md). */
    forgetRun(runId) {
      for (const [key, stored] of tasks) if (stored.task.runId === runId) tasks.delete(key)
    },
    shared: false,
    async enqueue(list, now) {
      for (const task of list) {
        const key = keyOf(task)
        if (!tasks.has(key))
          tasks.set(key, {
            task: { ...task },
            owner: null,
            epoch: 0,
            claimExpiresAt: 0,
            createdAt: now,
          })
      }
      if (list.length > 0) hints.notify()
    },
    async claim({ types, max, owner, now, expiresAt }) {
      const wanted = types ? new Set(types) : null
      const out: StoredWorkerTask[] = []
      for (const stored of tasks.values()) {
        if (out.length >= max) break
        if (!free(stored, now) || (wanted && !wanted.has(stored.task.type))) continue
        stored.owner = owner
        stored.epoch++
        stored.claimExpiresAt = expiresAt
        out.push(copy(stored))
      }
      return out
    },
    async take(claims) {
      const taken: WorkerTaskKey[] = []
      for (const claim of claims) {
        const key = keyOf(claim)
        if (tasks.get(key)?.epoch !== claim.epoch) continue
        tasks.delete(key)
        taken.push({ runId: claim.runId, effectId: claim.effectId, attempt: claim.attempt })
      }
      return taken
    },
    async remove(key, options = {}) {
      const stored = tasks.get(keyOf(key))
      if (!stored) return false
      if (options.unclaimedAt !== undefined && !free(stored, options.unclaimedAt)) return false
      return tasks.delete(keyOf(key))
    },
    async list(runId) {
      const out: StoredWorkerTask[] = []
      for (const stored of tasks.values())
        if (runId === undefined || stored.task.runId === runId) out.push(copy(stored))
      return out
    },
    watch: (listener) => hints.watch(listener),
  }
}
