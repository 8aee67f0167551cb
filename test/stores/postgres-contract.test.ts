import type { PostgresStore } from 'skein/postgres'
import { describeEventStore } from 'skein/testing'
import { freshPostgresStore, postgresAvailable, testSchemas } from '../support/postgres.js'

// The one store contract, on Postgres: every test gets a fresh schema, dropped after it.
if (postgresAvailable('postgres-contract')) {
  const schemas = testSchemas('contract')
  describeEventStore('postgres', () => freshPostgresStore(schemas), {
    cleanup: (store) => schemas.drop((store as PostgresStore).schema),
  })
}
