import { createActorHost, NOT_SUPPORTED_ROUTES, postgresRegistry, sharedCells } from 'skein/actor'
import { describeHttpHost } from 'skein/testing/vitest'
import { freshPostgresStore, postgresAvailable, testSchemas } from '../support/postgres.js'

// The HTTP host contract on an actor host whose cells share one Postgres store (the single
// writer from the store's lease): the embed route suite with the one declared difference, in
// process only (the transport is the same code as the other actor hosts'; this is about cells).
const differences = { notSupported: [...NOT_SUPPORTED_ROUTES] }

if (postgresAvailable('http-actor-shared')) {
  const schemas = testSchemas('http_actor_shared')
  describeHttpHost(
    'actor host, cells on shared Postgres',
    (setup) => {
      const store = freshPostgresStore(schemas)
      const host = createActorHost({
        ...setup,
        cells: sharedCells({ store }),
        registry: postgresRegistry({ store }),
      })
      return {
        ...host,
        stop: async (options?: { graceMs?: number }) => {
          await host.stop(options)
          await store.close()
        },
      }
    },
    { differences, transports: ['in-process'] },
  )
}
