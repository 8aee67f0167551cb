import type { Json } from './json.js'
import type { StandardSchema } from './schema.js'

/** Something startable or spawnable: a definition of some kind. */
export interface Definition {
  readonly kind: string
  readonly name: string
  readonly version: string
  readonly input?: StandardSchema
  /**
   * What recorded runs depend on (for a workflow: its nodes, their dependencies and failure
   * policies), as JSON. The engine records a fingerprint of it when a thread starts and
   * refuses to go on with a thread whose registered definition's shape differs
   * (DEFINITION_CHANGED): change the version instead (docs/workflows.md, "Versions").
   * Definitions without a shape are not checked.
   */
  readonly shape?: Json
}

/** A definition named without the object (`startRun`, spawn by name). */
export interface DefinitionRef {
  kind: string
  name: string
  version?: string
}

export const definitionLabel = (d: DefinitionRef): string =>
  `${d.kind}:${d.name}${d.version ? `@${d.version}` : ''}`
