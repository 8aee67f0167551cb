// skein/actor: the actor host (docs/http.md, "Actor host").
export {
  type ActorHost,
  type ActorHostOptions,
  type CellEngineOptions,
  createActorHost,
} from './actor-host.js'
export { NOT_SUPPORTED_ROUTES } from './actor-routes.js'
export { type CellStorage, type CellStore, memoryCells } from './cell-store.js'
export { postgresRegistry } from './postgres-registry.js'
export {
  memoryRegistry,
  type RegisteredRun,
  type RegistryPage,
  type RunRegistry,
} from './run-registry.js'
export { type SharedCellsOptions, sharedCells } from './shared-cells.js'
export { cellFileName, type SqliteCellsOptions, sqliteCells } from './sqlite-cells.js'
export { sqliteRegistry } from './sqlite-registry.js'
