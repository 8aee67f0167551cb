export type { SqliteDriver } from './driver.js'
export { type OnUpgrade, SCHEMA_VERSION } from './schema.js'
export { type SqliteRunIndexOptions, sqliteRunIndex } from './sqlite-run-index.js'
export {
  type SqliteCompanion,
  type SqliteStore,
  type SqliteStoreOptions,
  sqliteStore,
} from './sqlite-store.js'
