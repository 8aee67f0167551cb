export {
  fromPostgresJs,
  type PostgresJsSql,
  type PostgresQueryable,
} from './driver.js'
export { type PostgresRunIndexOptions, postgresRunIndex } from './postgres-run-index.js'
export {
  type PostgresCompanion,
  type PostgresConnection,
  type PostgresStore,
  type PostgresStoreOptions,
  postgresStore,
} from './postgres-store.js'
export { SCHEMA_VERSION } from './schema.js'
