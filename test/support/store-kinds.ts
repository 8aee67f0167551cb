import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { type EventStore, memoryStore } from 'skein'
import { postgresStore } from 'skein/postgres'
import { sqliteStore } from 'skein/sqlite'
import { afterAll, afterEach } from 'vitest'
import { PG_URL, postgresAvailable, testSchemas } from './postgres.js'

/** One empty storage: every `open()` opens a store on it, as a restarted process would. */
export interface Storage {
  open(): EventStore
}

export interface StoreKind {
  name: 'memory' | 'sqlite' | 'postgres'
  fresh(): Storage
}

/**
 * The persistent stores an engine test runs on, for `describe.each`: memory, SQLite (a file
 * in a temporary directory) and Postgres (a schema of its own, when SKEIN_PG_URL reaches a
 * server; else a loud skip). Stores opened in a test are closed after it. Call it at the top
 * of the file, before the file's own `afterEach` that stops engines (hooks run last-first, so
 * engines stop before their stores close).
 */
export function storeKinds(file: string): StoreKind[] {
  const opened: EventStore[] = []
  afterEach(async () => {
    for (const store of opened.splice(0).reverse()) await store.close?.()
  })
  const track = (store: EventStore) => {
    opened.push(store)
    return store
  }
  const dir = mkdtempSync(join(tmpdir(), `skein-${file}-`))
  afterAll(() => rmSync(dir, { recursive: true, force: true }))
  let files = 0
  const kinds: StoreKind[] = [
    {
      name: 'memory',
      fresh() {
        const store = memoryStore()
        return { open: () => store }
      },
    },
    {
      name: 'sqlite',
      fresh() {
        const path = join(dir, `${++files}.db`)
        return { open: () => track(sqliteStore({ path })) }
      },
    },
  ]
  if (postgresAvailable(file)) {
    const schemas = testSchemas(file)
    kinds.push({
      name: 'postgres',
      fresh() {
        const schema = schemas.next()
        return {
          open: () =>
            track(postgresStore({ connectionString: PG_URL }, { schema, maxConnections: 3 })),
        }
      },
    })
  }
  return kinds
}
