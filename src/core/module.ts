import type { Definition } from './definition.js'
import type { EffectDefinition } from './effect.js'
import type { KindDefinition } from './kind.js'
import type { ProjectionDefinition } from './projection.js'
import type { StandardSchema } from './schema.js'

export interface ModuleConfig {
  /** Prefix of the module's event and effect types: `payments` → `payments.charge`. */
  namespace: string
  version?: string
  /** Namespaces of modules that must be registered too. */
  dependencies?: readonly string[]
  /** Event catalog, keyed without the namespace. */
  events?: Record<string, StandardSchema>
  effects?: Record<string, EffectDefinition>
  /** Projections by their public name (unique across modules). */
  projections?: Record<string, ProjectionDefinition>
  /** Thread kinds by name (unique across modules). */
  kinds?: Record<string, KindDefinition>
  definitions?: readonly Definition[]
}

export interface Module extends Readonly<ModuleConfig> {
  readonly kindOf: 'module'
}

/** Declares a runtime module: the public API every module, ours and yours, is built on. */
export function defineModule(config: ModuleConfig): Module {
  return Object.freeze({ ...config, kindOf: 'module' as const })
}
