import type {
  ScheduleRecord,
  ScheduleStore,
  WaitUrlRecord,
  WaitUrlStore,
} from '../../core/ports.js'

const copy = <T>(value: T): T => structuredClone(value)

/** Schedules of the memory store (one process: lost on exit, like its runs). */
export function memorySchedules(): ScheduleStore {
  const rows = new Map<string, ScheduleRecord>()
  let mark: number | null = null
  const write = (record: ScheduleRecord, expectedVersion: number): boolean => {
    const row = rows.get(record.name)
    if (!row || row.version !== expectedVersion) return false
    rows.set(record.name, copy(record))
    return true
  }
  return {
    async list() {
      return [...rows.values()].map(copy).sort((a, b) => (a.name < b.name ? -1 : 1))
    },
    async get(name) {
      const row = rows.get(name)
      return row ? copy(row) : null
    },
    async insert(record) {
      if (rows.has(record.name)) return false
      rows.set(record.name, copy(record))
      return true
    },
    async update(record, expectedVersion) {
      return write(record, expectedVersion)
    },
    async updateMany(writes) {
      return writes.map(({ record, expectedVersion }) => write(record, expectedVersion))
    },
    async delete(name) {
      return rows.delete(name)
    },
    async due(until, limit) {
      return [...rows.values()]
        .filter((r) => !r.paused && r.wakeAt !== null && r.wakeAt <= until)
        .sort((a, b) => (a.wakeAt as number) - (b.wakeAt as number))
        .slice(0, limit)
        .map(copy)
    },
    async nextWakeAt() {
      let next: number | null = null
      for (const r of rows.values()) {
        if (r.paused || r.wakeAt === null) continue
        if (next === null || r.wakeAt < next) next = r.wakeAt
      }
      return next
    },
    async readMark() {
      return mark
    },
    async writeMark(at) {
      mark = at
    },
  }
}

/** Wait URL tokens of the memory store; `forgetRun` drops a deleted run's. */
export function memoryWaitUrls(): WaitUrlStore & { forgetRun(runId: string): void } {
  const rows = new Map<string, WaitUrlRecord>()
  return {
    forgetRun(runId) {
      for (const [hash, row] of rows) if (row.runId === runId) rows.delete(hash)
    },
    async insert(record) {
      rows.set(record.hash, copy(record))
    },
    async find(hash) {
      const row = rows.get(hash)
      return row ? copy(row) : null
    },
    async use(hash, now) {
      const row = rows.get(hash)
      if (!row || row.usedAt !== null) return false
      row.usedAt = now
      return true
    },
  }
}
