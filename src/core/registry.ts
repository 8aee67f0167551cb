import { attributeTypesProblem, type RunAttributeType } from './attributes.js'
import type { Definition, DefinitionRef } from './definition.js'
import { definitionLabel } from './definition.js'
import { type EffectDefinition, REPLACES } from './effect.js'
import { CompositionError } from './errors.js'
import { eventTypeProblem, ownerOf } from './event-types.js'
import { effectFlowProblem, type FlowControl, flowProblem, flowQueue } from './flow.js'
import type { KindDefinition } from './kind.js'
import { type CatalogEntry, type InputEvent, isInputEvent, type Module } from './module.js'
import type { ProjectionDefinition } from './projection.js'
import { isStandardSchema, isTypeOnly, type StandardSchema } from './schema.js'
import { compareVersions } from './version-order.js'

const NAMESPACE = /^[a-z][a-z0-9_-]*$/

/**
 * Everything the registered modules provide, composed once at `createEngine`. Composition
 * fails fast on duplicates and missing dependencies.
 */
export class Registry {
  readonly modules = new Map<string, Module>()
  readonly kinds = new Map<string, KindDefinition>()
  readonly effects = new Map<string, EffectDefinition>()
  /** Every catalog event's schema by full type, internal and input alike. */
  readonly events = new Map<string, StandardSchema>()
  /** The catalog events accepted from outside, by full type. */
  readonly inputs = new Map<string, InputEvent>()
  /** The module namespace of each kind and registered effect type (who emits). */
  readonly kindNamespaces = new Map<string, string>()
  readonly effectNamespaces = new Map<string, string>()
  /** Per namespace: catalog key (the local name a module emits) → full type. */
  private readonly catalogs = new Map<string, Map<string, string>>()
  readonly projections = new Map<string, ProjectionDefinition>()
  /**
   * Whether new runs' folds hold every registered projection (and so their snapshots do).
   * Needed only when trimming can remove the events they come from; otherwise `project` folds
   * the log on demand and runs' folds (and snapshots) stay small. What an existing fold holds
   * is recorded in the fold itself (core/fold/projections.ts), never decided by this flag.
   */
  foldProjections = false
  /** The projections as a list, for the per-event fold loop (no iterator allocations). */
  readonly projectionList: Array<{ name: string; projection: ProjectionDefinition }> = []
  private readonly definitions = new Map<string, Definition>()
  /** By `kind:name`: the version a ref without one resolves to. */
  private readonly defaults = new Map<string, Definition>()
  private readonly effectTypes = new Map<EffectDefinition, string>()
  private readonly definitionObjects = new Set<Definition>()
  /**
   * Every attribute name the definitions declare, with its type: one type per name across the
   * engine, so a filter on it means one thing (docs/operating-runs.md, "Attributes").
   */
  readonly attributeTypes = new Map<string, RunAttributeType>()

  constructor(modules: readonly Module[]) {
    for (const mod of modules) this.addModule(mod)
    for (const mod of modules) {
      for (const dep of mod.dependencies ?? []) {
        if (!this.modules.has(dep)) {
          throw new CompositionError(
            `module "${mod.namespace}" needs module "${dep}": add it to createEngine({ modules })`,
            { module: mod.namespace, missing: dep },
          )
        }
      }
    }
    for (const mod of modules) for (const d of mod.definitions ?? []) this.addDefinition(d)
    // Namespaces match [a-z][a-z0-9_-]*: nothing to escape.
    this.ownedType = new RegExp(
      `^(?:${[...this.modules.keys()].join('|') || '(?!)'})(?:\\.|$)`,
      'i',
    )
  }

  /** Matches types whose first segment is a registered namespace, in any letter case. */
  private readonly ownedType: RegExp

  /**
   * The registered module that owns `type` by its first segment, compared in any letter case
   * (`APPROVAL.decided` is approval's, and not its catalog's): a test, no allocation, for the
   * application types that most signals are.
   */
  ownerOf(type: string): Module | undefined {
    return this.ownedType.test(type) ? this.modules.get(ownerOf(type)) : undefined
  }

  private addModule(mod: Module): void {
    if (mod?.kindOf !== 'module') {
      throw new CompositionError('modules must be created with defineModule() or a module factory')
    }
    const ns = mod.namespace
    if (!NAMESPACE.test(ns) || ns === 'runtime') {
      throw new CompositionError(`invalid module namespace "${ns}"`, { module: ns })
    }
    if (this.modules.has(ns)) {
      throw new CompositionError(`module namespace "${ns}" is registered twice`, { module: ns })
    }
    this.modules.set(ns, mod)
    const catalog = new Map<string, string>()
    this.catalogs.set(ns, catalog)
    for (const [name, entry] of Object.entries(mod.events ?? {})) {
      const type = `${ns}.${name}`
      this.events.set(type, catalogSchema(type, entry))
      if (isInputEvent(entry)) this.inputs.set(type, entry)
      catalog.set(name, type)
    }
    for (const [name, effect] of Object.entries(mod.effects ?? {})) {
      const type = `${ns}.${name}`
      if (this.effects.has(type)) {
        throw new CompositionError(`effect type "${type}" is registered twice`, { effect: type })
      }
      const flowError = effectFlowProblem(effect)
      if (flowError) throw new CompositionError(`effect ${type}: ${flowError}`, { effect: type })
      this.effects.set(type, effect)
      this.effectNamespaces.set(type, ns)
      if (!this.effectTypes.has(effect)) this.effectTypes.set(effect, type)
      const replaced = effect[REPLACES]
      if (replaced && !this.effectTypes.has(replaced)) this.effectTypes.set(replaced, type)
    }
    for (const [name, projection] of Object.entries(mod.projections ?? {})) {
      if (this.projections.has(name)) {
        throw new CompositionError(`projection "${name}" is registered twice`, { projection: name })
      }
      this.projections.set(name, projection)
      this.projectionList.push({ name, projection })
    }
    for (const [name, kind] of Object.entries(mod.kinds ?? {})) {
      if (this.kinds.has(name)) {
        throw new CompositionError(`kind "${name}" is registered twice`, { kind: name })
      }
      this.kinds.set(name, kind)
      this.kindNamespaces.set(name, ns)
    }
  }

  private addAttributeTypes(key: string, definition: Definition): void {
    const problem = attributeTypesProblem(definition.attributes)
    if (problem) throw new CompositionError(`definition ${key}: ${problem}`, { definition: key })
    for (const [name, type] of Object.entries(definition.attributes ?? {})) {
      const known = this.attributeTypes.get(name)
      if (known !== undefined && known !== type) {
        throw new CompositionError(
          `definition ${key}: attribute ${name} is a ${type}, but another definition declares it a ${known} (one type per attribute name)`,
          { definition: key, attribute: name },
        )
      }
      this.attributeTypes.set(name, type)
    }
  }

  /** Each effect a definition declares is registered by a module (objects: or stood in for). */
  private checkDeclaredEffects(key: string, effects: Definition['effects']): void {
    if (effects === undefined) return
    if (!Array.isArray(effects)) {
      throw new CompositionError(`definition ${key}: effects must be a list of effects`, {
        definition: key,
      })
    }
    effects.forEach((effect, index) => {
      const registered =
        typeof effect === 'string'
          ? this.effects.has(effect)
          : this.effectTypes.has(effect) ||
            (typeof effect?.type === 'string' && this.effects.has(effect.type))
      if (registered) return
      const named =
        typeof effect === 'string'
          ? `"${effect}"`
          : `effects[${index}]${typeof effect?.type === 'string' ? ` ("${effect.type}")` : ''}`
      throw new CompositionError(
        `definition ${key} declares effect ${named}, which no module registers: add it to a module's effects (defineModule({ namespace, effects: { name: effect } })) and that module to createEngine's modules; in a test, replaceEffects from skein/testing swaps its implementation and keeps it registered`,
        { definition: key, effect: typeof effect === 'string' ? effect : index },
      )
    })
  }

  /** The full type of `name` in the catalog of module `namespace`, when it is a local name. */
  localEvent(namespace: string, name: string): string | undefined {
    return this.catalogs.get(namespace)?.get(name)
  }

  private addDefinition(definition: Definition): void {
    const key = definitionLabel(definition)
    if (!this.kinds.has(definition.kind)) {
      throw new CompositionError(
        `definition ${key} is of kind "${definition.kind}", which no registered module provides`,
        { definition: key },
      )
    }
    if (this.definitions.has(key)) {
      throw new CompositionError(`definition ${key} is registered twice`, { definition: key })
    }
    if (definition.default !== undefined && typeof definition.default !== 'boolean') {
      throw new CompositionError(`definition ${key}: default must be true or false`, {
        definition: key,
      })
    }
    checkSignalSchemas(key, definition.signals)
    this.checkDeclaredEffects(key, definition.effects)
    const flowError = flowProblem(definition.flow)
    if (flowError)
      throw new CompositionError(`definition ${key}: ${flowError}`, { definition: key })
    this.addAttributeTypes(key, definition)
    this.definitions.set(key, definition)
    this.definitionObjects.add(definition)
    this.chooseDefault(definition)
  }

  /**
   * The flow control of a queue (`flowQueue`: every version of one kind and name): the version
   * a ref without one resolves to says it, so changing a limit is a deploy of that version;
   * when that version declares none, the first registered version that does.
   */
  flowOf(queue: string): FlowControl | undefined {
    const chosen = this.defaults.get(queue)?.flow
    if (chosen) return chosen
    for (const d of this.definitions.values()) if (flowQueue(d) === queue && d.flow) return d.flow
    return undefined
  }

  /**
   * Keeps the version a ref without one resolves to: the definition marked `default: true`,
   * else the highest version (compareVersions). Registration order never matters.
   */
  private chooseDefault(definition: Definition): void {
    const name = `${definition.kind}:${definition.name}`
    const current = this.defaults.get(name)
    if (definition.default === true && current?.default === true) {
      throw new CompositionError(
        `definitions ${definitionLabel(current)} and ${definitionLabel(definition)} are both marked default: keep default: true on one version`,
        { definition: name, versions: [current.version, definition.version] },
      )
    }
    const wins =
      !current ||
      definition.default === true ||
      (current.default !== true && compareVersions(definition.version, current.version) > 0)
    if (wins) this.defaults.set(name, definition)
  }

  /**
   * The registered definition for a ref; without a version, the one marked `default: true`, else
   * the highest version (docs/engine.md, "Which version a start without one gets").
   */
  resolve(ref: DefinitionRef): Definition | undefined {
    return ref.version
      ? this.definitions.get(definitionLabel(ref))
      : this.defaults.get(`${ref.kind}:${ref.name}`)
  }

  /** The registered definition for an object passed to `start`/`spawn`. */
  resolveObject(definition: Definition): Definition | undefined {
    if (this.definitionObjects.has(definition)) return definition
    const found = this.definitions.get(definitionLabel(definition))
    return found
  }

  listDefinitions(): Definition[] {
    return [...this.definitions.values()]
  }

  /** `effectType` as one shared function, for handler contexts to hand out without a bind. */
  readonly effectTypeOf = (effect: EffectDefinition): string | undefined => this.effectType(effect)

  /** The registered type of an effect given by type or by object. */
  effectType(effect: string | EffectDefinition): string | undefined {
    if (typeof effect === 'string') return this.effects.has(effect) ? effect : undefined
    return this.effectTypes.get(effect) ?? effect.type
  }
}

/**
 * A definition's declared signals, checked at composition: each type follows the event-type
 * grammar and has a schema that validates (they come from outside: `payload<T>()` only types).
 */
function checkSignalSchemas(key: string, signals: Definition['signals']): void {
  if (signals === undefined) return
  for (const [type, schema] of Object.entries(signals)) {
    const details = { definition: key, signal: type }
    const problem = eventTypeProblem(type)
    if (problem)
      throw new CompositionError(`definition ${key}: signal ${type}: ${problem}`, details)
    if (!isStandardSchema(schema) || isTypeOnly(schema)) {
      throw new CompositionError(
        `definition ${key}: signal ${type} needs a schema that validates what callers send (zod, valibot, arktype); payload<T>() only types it`,
        details,
      )
    }
  }
}

/**
 * The schema of catalog entry `type`, checked at composition: its name follows the event-type
 * grammar, and an input validates (a `payload<T>()` only types what anyone may send).
 */
function catalogSchema(type: string, entry: CatalogEntry): StandardSchema {
  const details = { event: type }
  const problem = eventTypeProblem(type)
  if (problem) throw new CompositionError(`catalog event ${type}: ${problem}`, details)
  const schema = isInputEvent(entry) ? entry.payload : entry
  if (!isStandardSchema(schema)) {
    throw new CompositionError(
      `catalog event ${type} must be a Standard Schema (or payload<T>()), or defineInput(schema)`,
      details,
    )
  }
  if (isInputEvent(entry) && isTypeOnly(schema)) {
    throw new CompositionError(
      `input event ${type} needs a schema that validates what outside callers send; payload<T>() only types it`,
      details,
    )
  }
  return schema
}
