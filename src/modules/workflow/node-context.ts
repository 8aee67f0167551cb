import type {
  Definition,
  EffectContext,
  ErrorInfo,
  Json,
  KindContext,
} from '../../core/module-api.js'
import {
  type Directive,
  type directiveBuilders,
  FanOutError,
  mapDirective,
  type NodeContext,
} from './directives.js'

type Builders = ReturnType<typeof directiveBuilders>
type BuilderName = keyof Builders | 'map'

/**
 * The `ctx` of one run of a node body. It notes every directive the body makes, so a directive
 * that does not become the body's value (dropped, awaited, a second one, inside an array) is
 * refused instead of silently doing nothing (`misuse`). Builders are getters made on first read
 * (most bodies use none), so destructuring them (`({ sleep }) => sleep(5)`) still works.
 */
export class NodeBodyContext implements NodeContext {
  private made: Array<{ name: BuilderName; directive: Directive }> | undefined
  private fns: Partial<Builders> | undefined
  /** A `ctx.map` given bad input: the node fails with it, never retried. */
  fanOutError: ErrorInfo | undefined

  readonly input: any
  readonly runId: string
  readonly threadId: string

  constructor(
    private readonly workflow: Definition,
    thread: KindContext,
    readonly results: Record<string, any>,
    readonly nodeId: string,
    private readonly effect: EffectContext,
    private readonly base: Builders,
  ) {
    this.input = thread.input
    this.runId = thread.runId
    this.threadId = thread.threadId
  }

  get attempt(): number {
    return this.effect.attempt
  }
  get signal(): AbortSignal {
    return this.effect.signal
  }
  get sleep(): Builders['sleep'] {
    return this.builder('sleep')
  }
  get sleepUntil(): Builders['sleepUntil'] {
    return this.builder('sleepUntil')
  }
  get invoke(): Builders['invoke'] {
    return this.builder('invoke')
  }
  get spawn(): Builders['spawn'] {
    return this.builder('spawn')
  }
  get waitFor(): Builders['waitFor'] {
    return this.builder('waitFor')
  }
  get waitForUrl(): Builders['waitForUrl'] {
    return this.builder('waitForUrl')
  }
  get gate(): Builders['gate'] {
    return this.builder('gate')
  }
  get evaluate(): Builders['evaluate'] {
    return this.builder('evaluate')
  }

  /** The items' directives it makes count as one: the fan-out the node returns. */
  get map(): NodeContext['map'] {
    return ((items: unknown, step: (item: unknown, index: number) => unknown, options?: any) => {
      const mark = this.made?.length ?? 0
      let directive: Directive
      try {
        directive = mapDirective(items, step, options)
      } catch (error) {
        if (error instanceof FanOutError) {
          const where = `workflow ${this.workflow.name}@${this.workflow.version}, node ${this.nodeId}`
          this.fanOutError = { code: error.code, message: `${where}: ${error.message}` }
        }
        throw error
      }
      if (this.made) this.made.length = mark
      ;(this.made ??= []).push({ name: 'map', directive })
      return directive
    }) as NodeContext['map']
  }

  private builder<K extends keyof Builders>(name: K): Builders[K] {
    const fns = (this.fns ??= {})
    const made = (...args: unknown[]): Directive => {
      const directive = (this.base[name] as (...a: unknown[]) => Directive)(...args)
      ;(this.made ??= []).push({ name, directive })
      return directive
    }
    fns[name] ??= made as Builders[K]
    return fns[name] as Builders[K]
  }

  /**
   * Why the body's `value` misuses the directives it made, if it does. Fine: no directive
   * made, or exactly one, returned as the value itself.
   */
  misuse(value: unknown): ErrorInfo | undefined {
    const made = this.made
    if (made === undefined) return undefined
    if (made.length === 1 && value === made[0].directive) return undefined
    const where = `workflow ${this.workflow.name}@${this.workflow.version}, node ${this.nodeId}`
    const call = (name: BuilderName) => `ctx.${name}`
    if (made.length === 1) {
      const { name, directive } = made[0]
      const nested = contains(value, directive, new Set())
      const message = nested
        ? `${where}: ${call(name)}() made a directive that the node returned inside its value; a directive only takes effect as the value the node returns itself: write \`return ${call(name)}(…)\``
        : `${where}: ${call(name)}() made a directive that the node did not return; a directive only takes effect as the value the node returns: write \`return ${call(name)}(…)\``
      return { code: 'DIRECTIVE_MISUSE', message }
    }
    const names = made.map((m) => call(m.name)).join(', ')
    const inArray = Array.isArray(value) && made.some((m) => value.includes(m.directive))
    const message = inArray
      ? `${where}: the node made ${made.length} directives (${names}) and returned them in an array, but a node does one durable step: parallel work is separate nodes that share the same \`after\`, each returning one directive`
      : `${where}: the node made ${made.length} directives (${names}) but a node does one durable step; awaiting a directive does not wait for it. Return one directive per node and chain nodes with \`after\` (e.g. a node that returns ${call(made[0].name)}(…), then one after it that returns ${call(made[1].name)}(…))`
    return { code: 'DIRECTIVE_MISUSE', message, details: { directives: names } as Json }
  }
}

/** Whether `value` holds `target` somewhere inside its arrays and plain objects. */
function contains(value: unknown, target: unknown, seen: Set<unknown>): boolean {
  if (value === target) return true
  if (typeof value !== 'object' || value === null || seen.has(value)) return false
  seen.add(value)
  const items = Array.isArray(value) ? value : Object.values(value)
  return items.some((item) => contains(item, target, seen))
}
