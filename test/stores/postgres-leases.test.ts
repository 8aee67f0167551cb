import type { PostgresStore } from 'skein/postgres'
import { describeClaimStore, describeLeaseStore } from 'skein/testing/vitest'
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
  // The shared lease and claim contracts (the ones SQLite and memory run too).
  const twoStores = async () => {
    const a = freshPostgresStore(schemas)
    await a.ready()
    const b = freshPostgresStore(schemas, { schema: a.schema })
    return {
      a,
      b,
      close: async () => {
        await a.close()
        await b.close()
        await schemas.drop(a.schema)
      },
    }
  }
  describeLeaseStore('postgres (two stores on one schema)', twoStores)
  describeClaimStore('postgres (two stores on one schema)', twoStores)
}
