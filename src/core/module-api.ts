// The module API: everything a runtime module — the built-in workflow, approval, agent and
// evaluator modules, and yours — is built on. Modules under src/modules import core only
// through this file (lint: biome.json), and the `skein` root exports every name in it
// (test/architecture/module-api.test.ts), so a built-in module uses exactly what a user's
// module can.

export type { RunAttributeTypes, RunAttributeValue } from './attributes.js'
export type { Command, Outcome, WaitCondition } from './commands.js'
export { commands } from './commands.js'
export type {
  Definition,
  DefinitionRef,
  InputArgs,
  InputOf,
  OutputOf,
  SignalSchemas,
} from './definition.js'
export type {
  EffectConfig,
  EffectContext,
  EffectDefinition,
  EffectExecutionMode,
} from './effect.js'
export { defineEffect } from './effect.js'
export type { EventEnvelope, EventInput } from './envelope.js'
// Errors a module throws (definition checks, handlers) and the one way to record a throw.
export type { ErrorInfo } from './errors.js'
export {
  DefinitionError,
  InvalidInputError,
  SkeinError,
  TerminalError,
  toErrorInfo,
} from './errors.js'
export type { FlowControl } from './flow.js'
export type { Json, JsonObject } from './json.js'
export { inputJsonSchema } from './json-schema.js'
export type { DecideContext, KindContext, KindDefinition, MigrationDifference } from './kind.js'
export { defineKind } from './kind.js'
export type {
  CatalogEntry,
  InputContext,
  InputEvent,
  InputWaiter,
  Module,
  ModuleConfig,
} from './module.js'
export { defineInput, defineModule } from './module.js'
export type { ProjectionDefinition } from './projection.js'
export { defineProjection } from './projection.js'
export type { RetryPolicy } from './retry.js'
// Projections and kinds that read the runtime's own events read them typed.
export type {
  RuntimeEvent,
  RuntimeEventPayloads,
  RuntimeEventType,
} from './runtime-events.js'
export { asRuntimeEvent, RT as RuntimeEvents } from './runtime-events.js'
export type {
  InferInput,
  InferOutput,
  StandardIssue,
  StandardSchema,
} from './schema.js'
export { formatIssues, payload } from './schema.js'
export {
  WAIT_URL_KEY,
  type WaitUrl,
  type WaitUrlOptions,
  waitUrl,
} from './wait-url.js'
