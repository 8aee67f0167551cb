import postgres from 'postgres'
import { fromPostgresJs, type PostgresStore, postgresStore } from 'skein/postgres'
import { describeEventStore } from 'skein/testing/vitest'
import { afterAll } from 'vitest'
import { freshPostgresStore, PG_URL, postgresAvailable, testSchemas } from '../support/postgres.js'

// The one store contract, on Postgres: every test gets a fresh schema, dropped after it. It
// runs twice: on the pool the store makes (pg), and on a postgres.js instance handed in.
if (postgresAvailable('postgres-contract')) {
  const schemas = testSchemas('contract')
  const cleanup = (store: unknown) => schemas.drop((store as PostgresStore).schema)
  describeEventStore('postgres', () => freshPostgresStore(schemas), { cleanup })

  const sql = postgres(PG_URL, { max: 4, onnotice: () => {} })
  afterAll(() => sql.end())
  describeEventStore(
    'postgres via postgres.js',
    () => postgresStore({ pool: fromPostgresJs(sql) }, { schema: schemas.next() }),
    { cleanup },
  )
}
