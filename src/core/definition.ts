import type { StandardSchema } from './schema.js'

/** Something startable or spawnable: a definition of some kind. */
export interface Definition {
  readonly kind: string
  readonly name: string
  readonly version: string
  readonly input?: StandardSchema
}

/** A definition named without the object (`startRun`, spawn by name). */
export interface DefinitionRef {
  kind: string
  name: string
  version?: string
}

export const definitionLabel = (d: DefinitionRef): string =>
  `${d.kind}:${d.name}${d.version ? `@${d.version}` : ''}`
