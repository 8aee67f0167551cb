import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { type EventStore, memoryStore } from 'skein'
import { postgresStore } from 'skein/postgres'
import { sqliteStore } from 'skein/sqlite'
import { describeWorkerTaskStore, type WorkerTaskStorePair } from 'skein/testing/vitest'
import { afterEach } from 'vitest'
import { PG_URL, postgresAvailable, testSchemas } from '../support/postgres.js'

const opened: EventStore[] = []
afterEach(async () => {
  for (const store of opened.splice(0)) await store.close?.()
})
const pair = (a: EventStore, b: EventStore): WorkerTaskStorePair => {
  opened.push(a, b)
  if (!a.workerTasks || !b.workerTasks) throw new Error('store without worker tasks')
  return { a: a.workerTasks, b: b.workerTasks }
}

describeWorkerTaskStore('memory', () => {
  const store = memoryStore()
  return pair(store, store)
})

const dir = mkdtempSync(join(tmpdir(), 'skein-worker-tasks-'))
let files = 0
describeWorkerTaskStore('sqlite (two connections to one file)', () => {
  const path = join(dir, `${++files}.db`)
  return pair(sqliteStore({ path }), sqliteStore({ path }))
})

if (postgresAvailable('worker-task-store')) {
  const schemas = testSchemas('worker-task-store')
  describeWorkerTaskStore('postgres (two pools on one schema)', async () => {
    const schema = schemas.next()
    const a = postgresStore({ connectionString: PG_URL }, { schema, maxConnections: 2 })
    await a.ready()
    return pair(a, postgresStore({ connectionString: PG_URL }, { schema, maxConnections: 2 }))
  })
}
