import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { type EventStore, memoryStore } from 'skein'
import { postgresStore } from 'skein/postgres'
import { sqliteStore } from 'skein/sqlite'
import { describeScheduleStore, type ScheduleStorePair } from 'skein/testing/vitest'
import { afterEach } from 'vitest'
import { PG_URL, postgresAvailable, testSchemas } from '../support/postgres.js'

const opened: EventStore[] = []
afterEach(async () => {
  for (const store of opened.splice(0)) await store.close?.()
})
const pair = (a: EventStore, b: EventStore): ScheduleStorePair => {
  opened.push(a, b)
  const tables = (s: EventStore) => {
    if (!s.schedules || !s.waitUrls) throw new Error('store without schedule tables')
    return { schedules: s.schedules, waitUrls: s.waitUrls }
  }
  return { a: tables(a), b: tables(b) }
}

describeScheduleStore('memory', () => {
  const store = memoryStore()
  return pair(store, store)
})

const dir = mkdtempSync(join(tmpdir(), 'skein-schedule-store-'))
let files = 0
describeScheduleStore('sqlite (two connections to one file)', () => {
  const path = join(dir, `${++files}.db`)
  return pair(sqliteStore({ path }), sqliteStore({ path }))
})

if (postgresAvailable('schedule-store')) {
  const schemas = testSchemas('schedule-store')
  describeScheduleStore('postgres (two pools on one schema)', async () => {
    const schema = schemas.next()
    const a = postgresStore({ connectionString: PG_URL }, { schema, maxConnections: 2 })
    await a.ready()
    return pair(a, postgresStore({ connectionString: PG_URL }, { schema, maxConnections: 2 }))
  })
}
