import { postgresStore } from 'skein/postgres'
import { describeEngine } from 'skein/testing/vitest'
import { PG_URL, postgresAvailable, testSchemas } from '../support/postgres.js'

// The whole-engine contract on Postgres: a schema per test (dropped after it, and every schema
// of this file after the file); every restart opens a new store (a new pool) on it.
if (postgresAvailable('engine-contract')) {
  const schemas = testSchemas('engine-contract')
  describeEngine('postgres', () => {
    const schema = schemas.next()
    return {
      open: () => postgresStore({ connectionString: PG_URL }, { schema, maxConnections: 3 }),
      dispose: () => schemas.drop(schema),
    }
  })
}
