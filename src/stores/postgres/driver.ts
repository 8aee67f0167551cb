import { createRequire } from 'node:module'
import { NotConfiguredError } from '../../core/errors.js'
import type { ListenConnection } from './change-feed.js'

/**
 * What the store needs of a Postgres driver: one method that runs a statement with positional
 * parameters (`$1`, `$2`, …) and resolves with its rows. A `pg` Pool or Client satisfies it as
 * is; `fromPostgresJs(sql)` adapts a postgres.js instance. Every statement the store sends is a
 * single statement (a group commit is one function call), so no transaction ever spans calls
 * and any connection of a pool will do.
 */
export interface PostgresQueryable {
  query(text: string, params?: unknown[]): Promise<{ rows: any[] }>
}

/** The subset of a `pg` Pool the store uses when it makes the pool itself. */
export interface OwnPool extends PostgresQueryable {
  end(): Promise<void>
  on(event: 'error', listener: (error: Error) => void): unknown
}

/** The subset of a `pg` Client the change feed uses for its LISTEN connection. */
export interface PgClient {
  connect(): Promise<unknown>
  query(text: string): Promise<unknown>
  on(event: string, listener: (...args: any[]) => void): unknown
  end(): Promise<void>
}

interface PgModule {
  Pool: new (config: Record<string, unknown>) => OwnPool
  Client?: new (config: Record<string, unknown>) => PgClient
}

const INSTALL = 'npm install pg'

/**
 * Loads `pg` on first use: it is an optional peer dependency, so importing `skein/postgres`
 * never fails, and a missing package says exactly what to install. Users who hand in their
 * own `pool` never load it.
 */
export function loadPg(
  require: (id: string) => unknown = createRequire(import.meta.url),
): PgModule {
  let mod: unknown
  try {
    mod = require('pg')
  } catch (error) {
    if ((error as { code?: unknown })?.code === 'MODULE_NOT_FOUND') {
      throw new NotConfiguredError(
        `skein/postgres needs the optional peer dependency pg, which is not installed. Install it with: ${INSTALL} (or hand in your own pool: postgresStore({ pool }))`,
        { package: 'pg', install: INSTALL },
        { cause: error },
      )
    }
    throw error
  }
  return ((mod as { default?: unknown }).default ?? mod) as PgModule
}

export interface OwnPoolOptions {
  connectionString: string
  max: number
  connectTimeoutMs: number
  statementTimeoutMs: number
}

/**
 * A `pg` Pool with timeouts on every wait (connecting, a statement on the server, the answer
 * on the socket), so a lost database surfaces as an error, never a hang. An idle client that
 * loses its connection makes the pool emit 'error', which would crash the process unheard:
 * the pool drops that client and the next call connects afresh, so the event is only noted.
 */
export function createOwnPool(pg: PgModule, options: OwnPoolOptions): OwnPool {
  const pool = new pg.Pool({
    connectionString: options.connectionString,
    max: options.max,
    connectionTimeoutMillis: options.connectTimeoutMs,
    statement_timeout: options.statementTimeoutMs,
    query_timeout: options.statementTimeoutMs + options.connectTimeoutMs,
    keepAlive: true,
    fallback_application_name: 'skein',
  })
  pool.on('error', () => {})
  return pool
}

/**
 * Opens the connection the change feed LISTENs on: with the `pg` module the store loaded (its
 * own pool's connection string), or checked out of a handed-in pool that has `connect()` (a
 * pg Pool; the client goes back destroyed). Neither: undefined, and the feed only polls.
 */
export function listenConnector(
  source:
    | { pg: PgModule; connectionString: string; connectTimeoutMs: number }
    | { pool: PostgresQueryable },
): (() => Promise<ListenConnection>) | undefined {
  if ('pg' in source) {
    const { pg, connectionString, connectTimeoutMs } = source
    const Client = pg.Client
    if (!Client) return undefined
    return async () => {
      const client = new Client({
        connectionString,
        connectionTimeoutMillis: connectTimeoutMs,
        keepAlive: true,
        fallback_application_name: 'skein-listen',
      })
      // A connection lost before `connect` resolved must not crash the process unheard.
      client.on('error', () => {})
      try {
        await client.connect()
      } catch (error) {
        await client.end().catch(() => {})
        throw error
      }
      return {
        query: (text) => client.query(text),
        on: (event: string, listener: (...args: any[]) => void) => client.on(event, listener),
        close: () => client.end(),
      }
    }
  }
  const pool = source.pool as PostgresQueryable & {
    connect?: () => Promise<PgClient & { release(destroy?: boolean): void }>
  }
  if (typeof pool.connect !== 'function') return undefined
  return async () => {
    const client = await pool.connect!()
    client.on('error', () => {})
    return {
      query: (text) => client.query(text),
      on: (event: string, listener: (...args: any[]) => void) => client.on(event, listener),
      close: async () => client.release(true),
    }
  }
}

/** The postgres.js tagged-template function, as far as the adapter uses it. */
export interface PostgresJsSql {
  unsafe(text: string, params?: any[]): PromiseLike<readonly any[]>
}

/**
 * Adapts a postgres.js instance (`postgres(url)`) to the store's `query(text, params)`.
 *
 * @example
 * import postgres from 'postgres'
 * const store = postgresStore({ pool: fromPostgresJs(postgres(url)) })
 */
export function fromPostgresJs(sql: PostgresJsSql): PostgresQueryable {
  return {
    query: async (text, params) => ({ rows: [...(await sql.unsafe(text, params ?? []))] }),
  }
}
