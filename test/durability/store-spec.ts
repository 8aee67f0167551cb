import type { EventStore } from 'skein'
import { postgresStore } from 'skein/postgres'
import { sqliteStore } from 'skein/sqlite'

/**
 * A store named by one string, so a child process can be told which to open:
 * `sqlite:<file>` or `postgres:<schema>` (on SKEIN_PG_URL).
 */
export function openStoreSpec(spec: string): EventStore {
  const [kind, where] = [spec.slice(0, spec.indexOf(':')), spec.slice(spec.indexOf(':') + 1)]
  if (kind === 'sqlite') return sqliteStore({ path: where })
  if (kind === 'postgres') {
    const url = process.env.SKEIN_PG_URL
    if (!url) throw new Error('postgres store spec needs SKEIN_PG_URL')
    return postgresStore({ connectionString: url }, { schema: where, maxConnections: 4 })
  }
  throw new Error(`unknown store spec ${spec}`)
}
