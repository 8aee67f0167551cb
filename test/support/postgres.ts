import { randomBytes } from 'node:crypto'
import pg from 'pg'
import { type PostgresStore, type PostgresStoreOptions, postgresStore } from 'skein/postgres'
import { afterAll, it } from 'vitest'

/** The test database (`.ci/run` sets it; the machine's server is at 127.0.0.1:5432). */
export const PG_URL = process.env.SKEIN_PG_URL ?? ''

async function reachable(): Promise<string | undefined> {
  if (!PG_URL) return 'SKEIN_PG_URL is not set'
  const client = new pg.Client({ connectionString: PG_URL, connectionTimeoutMillis: 3000 })
  try {
    await client.connect()
    await client.query('SELECT 1')
    return undefined
  } catch (error) {
    return `${PG_URL} is unreachable (${(error as Error).message})`
  } finally {
    await client.end().catch(() => {})
  }
}

const whyNot = await reachable()

/**
 * Whether this file's Postgres tests can run. When they cannot, it says so loudly: a line on
 * stderr and a skipped test named after the reason (never a silent pass).
 */
export function postgresAvailable(file: string): boolean {
  if (whyNot === undefined) return true
  console.warn(`\n*** POSTGRES TESTS SKIPPED in ${file}: ${whyNot} ***\n`)
  it.skip(`postgres tests skipped: ${whyNot}`, () => {})
  return false
}

/** An admin connection for test set-up (dropping schemas, terminating backends). */
export function adminPool(): pg.Pool {
  const pool = new pg.Pool({ connectionString: PG_URL, max: 2 })
  pool.on('error', () => {})
  return pool
}

/**
 * Schemas for one test file: each `next()` names a fresh one (`t_<file>_<random>_<n>`); every
 * schema named is dropped after the file (and `drop` drops one early).
 */
export function testSchemas(file: string) {
  const prefix = `t_${file.replace(/[^a-z0-9]/gi, '_').toLowerCase()}_${randomBytes(3).toString('hex')}`
  const named: string[] = []
  const admin = adminPool()
  afterAll(async () => {
    for (const name of named) await admin.query(`DROP SCHEMA IF EXISTS "${name}" CASCADE`)
    await admin.end()
  })
  return {
    admin,
    next(): string {
      const name = `${prefix}_${named.length + 1}`
      named.push(name)
      return name
    },
    drop: (name: string) => admin.query(`DROP SCHEMA IF EXISTS "${name}" CASCADE`),
  }
}

/** A store on a fresh schema of `schemas` (small pool: many tests run side by side). */
export function freshPostgresStore(
  schemas: ReturnType<typeof testSchemas>,
  options: PostgresStoreOptions = {},
): PostgresStore {
  return postgresStore(
    { connectionString: PG_URL },
    { maxConnections: 4, ...options, schema: options.schema ?? schemas.next() },
  )
}
