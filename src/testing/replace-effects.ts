import { type EffectContext, type EffectDefinition, REPLACES } from '../core/effect.js'
import type { Module } from '../core/module.js'

/** A fake implementation: the effect's `execute`, as a test wants it to behave. */
export type FakeExecute<I = any, O = any> = (input: I, ctx: EffectContext) => O | Promise<O>

/** Which effect a fake replaces: the effect object, or its type (`'namespace.name'`). */
export type FakeTarget = EffectDefinition | string

/**
 * The modules with some effects' implementations replaced, for a test engine: each fake runs
 * under the replaced effect's type and policy, and an effect object the workflow invokes
 * resolves to it (docs/testing.md, "Testing your workflows"). Throws, naming it, for a target no
 * module registers.
 *
 * @example
 * createEngine({ modules: replaceEffects(modules, [[charge, async () => ({ chargeId: 'c1' })]]) })
 */
export function replaceEffects(
  modules: readonly Module[],
  fakes: ReadonlyArray<readonly [FakeTarget, FakeExecute]>,
): Module[] {
  const pending = new Map<FakeTarget, FakeExecute>(fakes.map(([target, fake]) => [target, fake]))
  for (const [target, fake] of pending) {
    if (typeof fake !== 'function') {
      throw new TypeError(`replaceEffects: the fake for ${label(target)} must be a function`)
    }
  }
  const out = modules.map((mod) => {
    if (!mod.effects) return mod
    let effects: Record<string, EffectDefinition> | undefined
    for (const [name, effect] of Object.entries(mod.effects)) {
      const type = `${mod.namespace}.${name}`
      const target = pending.has(effect) ? effect : pending.has(type) ? type : undefined
      if (target === undefined) continue
      const fake = pending.get(target) as FakeExecute
      pending.delete(target)
      effects ??= Object.assign({}, mod.effects)
      effects[name] = Object.freeze(
        Object.assign({}, effect, { execute: fake, [REPLACES]: effect }),
      ) as EffectDefinition
    }
    return effects ? (Object.freeze(Object.assign({}, mod, { effects })) as Module) : mod
  })
  if (pending.size > 0) {
    const names = [...pending.keys()].map(label).join(', ')
    throw new Error(
      `replaceEffects: no module registers ${names}: pass the modules that define it (an effect object must be in a module's effects)`,
    )
  }
  return out
}

const label = (target: FakeTarget) =>
  typeof target === 'string'
    ? `effect type "${target}"`
    : `an effect object${target.type ? ` (${target.type})` : ''}`
