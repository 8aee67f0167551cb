import type { StandardSchema } from './schema.js'

/** Something startable or spawnable: a definition of some kind. */
export interface Definition {
  readonly kind: string
  readonly name: string
  readonly version: string
  readonly input?: StandardSchema
  /**
   * The version a ref without a version means (`startRun`, `POST /runs`, spawn by name): at
   * most one per kind and name. Without one, the highest version (version-order.ts).
   */
  readonly default?: boolean
}

/** A definition named without the object (`startRun`, spawn by name). */
export interface DefinitionRef {
  kind: string
  name: string
  version?: string
}

export const definitionLabel = (d: DefinitionRef): string =>
  `${d.kind}:${d.name}${d.version ? `@${d.version}` : ''}`
