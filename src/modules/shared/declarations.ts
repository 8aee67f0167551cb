import {
  DefinitionError,
  type EffectDefinition,
  type SignalSchemas,
  type StandardSchema,
} from '../../core/module-api.js'

/**
 * What every kind's `define*` may declare beside its own config (docs/workflows.md, "Signals"
 * and "Declared effects"): the signals its runs accept and the effects they invoke, checked
 * here for their shape and at `createEngine` against the modules.
 */
export interface Declarations<Sg extends SignalSchemas> {
  /**
   * The signals its runs accept from outside, by event type: each payload's Standard Schema.
   * Sent to a run of this definition, such a signal is validated before anything is written
   * (INVALID_EVENT, HTTP 400), and the typed client and engine type its payload.
   */
  signals?: Sg
  /**
   * The effects its runs invoke (objects or registered types): `createEngine` refuses the
   * definition if no module registers one of them (at startup, not at a run's first invoke).
   */
  effects?: readonly (EffectDefinition | string)[]
}

/**
 * The declarations of a definition's config, checked, as the fields to spread into the
 * definition (absent ones left out): `where` names the definition in the error.
 */
export function declarationsOf<Sg extends SignalSchemas>(
  where: string,
  config: Declarations<Sg>,
): { signals?: Sg; effects?: readonly (EffectDefinition | string)[] } {
  const signals = checkSignals(where, config.signals)
  const effects = checkEffects(where, config.effects)
  return {
    ...(signals !== undefined ? { signals } : {}),
    ...(effects !== undefined ? { effects } : {}),
  }
}

/** Declared effects: a list (composition checks each is registered). */
function checkEffects(
  where: string,
  effects: readonly (EffectDefinition | string)[] | undefined,
): readonly (EffectDefinition | string)[] | undefined {
  if (effects === undefined) return undefined
  if (!Array.isArray(effects)) throw new DefinitionError(`${where}: effects must be a list`)
  return Object.freeze([...effects])
}

/** Declared signals: an object of Standard Schemas (composition checks the type names). */
function checkSignals<Sg extends SignalSchemas>(
  where: string,
  signals: Sg | undefined,
): Sg | undefined {
  if (signals === undefined) return undefined
  if (typeof signals !== 'object' || signals === null || Array.isArray(signals)) {
    throw new DefinitionError(`${where}: signals must be an object of schemas by event type`)
  }
  for (const [type, schema] of Object.entries(signals)) {
    if (typeof (schema as StandardSchema)?.['~standard']?.validate !== 'function') {
      throw new DefinitionError(
        `${where}: signal ${type} needs a Standard Schema that validates (zod, valibot, arktype)`,
      )
    }
  }
  return Object.freeze({ ...signals })
}
