import type { PostgresStore } from 'skein/postgres'
import { describeLeaseContract } from '../support/lease-contract.js'
import { freshPostgresStore, postgresAvailable, testSchemas } from '../support/postgres.js'

// Two stores (two pools, as two processes would have) on one schema.
if (postgresAvailable('postgres-leases')) {
  const schemas = testSchemas('leases')
  describeLeaseContract(
    'postgres, two pools on one schema',
    async () => {
      const a = freshPostgresStore(schemas)
      await a.ready()
      const b = freshPostgresStore(schemas, { schema: a.schema })
      return [a, b]
    },
    (a) => schemas.drop((a as PostgresStore).schema),
  )
}
