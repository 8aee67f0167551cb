import type { EventStore } from 'skein'
import { sqliteStore } from 'skein/sqlite'

/** A SQLite store whose lease reads are counted (`reads`: the run id of each `readLease`). */
export function leaseReadCountingStore(path: string) {
  const inner = sqliteStore({ path })
  const reads: string[] = []
  const store: EventStore = {
    ...inner,
    leases: {
      ...inner.leases!,
      readLease: (runId) => {
        reads.push(runId)
        return inner.leases!.readLease(runId)
      },
    },
  }
  return { store, inner, reads }
}
