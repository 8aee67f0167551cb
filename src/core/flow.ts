import { InvalidInputError } from './errors.js'

/**
 * Flow control of a definition's runs (docs/flow-control.md):
 * - `concurrency`: at most `limit` runs of the definition (all its versions) admitted and not
 *   yet finished at once, per `key` of the start's input when it is given (one queue otherwise);
 * - `rate`: at most `limit` admissions in any `periodMs`, per key; the excess waits;
 * - `singleton`: at most one active run per key; a second start gets the live run (`skip`) or
 *   waits behind it (`queue`);
 * - `debounce`: starts of one key within `periodMs` of each other become one run, started with
 *   the last input once the key is quiet for `periodMs` (or `maxWaitMs` after the first).
 *
 * A run waits in one key's queue: `concurrency`, `rate` and `singleton` share their key
 * function (each that gives one gives the same function). `debounce` has its own.
 */
export interface FlowControl<I = any> {
  concurrency?: { limit: number; key?: (input: I) => string }
  rate?: { limit: number; periodMs: number; key?: (input: I) => string }
  singleton?: { key: (input: I) => string; mode: 'skip' | 'queue' }
  debounce?: { periodMs: number; key: (input: I) => string; maxWaitMs?: number }
}

/** What a start records about its place in a queue (`runtime.run.queued`, `runtime.run.admitted`). */
export interface FlowPlace {
  /** The queue: `<kind>:<name>` of the definition (every version shares it). */
  queue: string
  /** The key of its queue ('' without a key function): concurrency's, rate's, singleton's. */
  key: string
  /** The start's priority (higher first within its key; default 0). */
  priority: number
  /** The earliest admission (epoch ms; the start's time unless `startAt` delayed it). */
  startAt: number
  /** Singleton `skip`: not queued when the key has a live run; the start gets that run. */
  skip?: true
  /** Debounce: the window's key, period and longest wait. */
  debounce?: { key: string; periodMs: number; maxWaitMs?: number }
}

/** The queue of a definition's runs: every version of one kind and name shares it. */
export const flowQueue = (d: { kind: string; name: string }): string => `${d.kind}:${d.name}`

/** The longest key a key function may return (it is stored and indexed). */
export const MAX_FLOW_KEY_LENGTH = 256

const KNOWN = ['concurrency', 'rate', 'singleton', 'debounce']

/**
 * Checks a definition's `flow` when the engine is composed (a bad limit is the author's code,
 * refused before anything runs). Returns the problem, or null.
 */
export function flowProblem(flow: unknown): string | null {
  if (flow === undefined) return null
  if (flow === null || typeof flow !== 'object') return 'flow must be an object'
  for (const field of Object.keys(flow)) {
    if (!KNOWN.includes(field)) return `flow has no option ${field} (known: ${KNOWN.join(', ')})`
  }
  const { concurrency, rate, singleton, debounce } = flow as FlowControl
  const problem =
    controlProblem('concurrency', concurrency, { limit: 'count', key: 'optional' }) ??
    controlProblem('rate', rate, { limit: 'count', periodMs: 'ms', key: 'optional' }) ??
    controlProblem('singleton', singleton, { key: 'required', mode: 'mode' }) ??
    controlProblem('debounce', debounce, { periodMs: 'ms', key: 'required', maxWaitMs: 'maxWait' })
  if (problem) return problem
  if (singleton && concurrency) {
    return 'flow.singleton is at most one active run per key: declare it or flow.concurrency, not both'
  }
  const keyed = [concurrency, rate, singleton].filter((c) => c !== undefined)
  if (new Set(keyed.map((c) => c.key)).size > 1) {
    return 'flow.concurrency, flow.rate and flow.singleton count per one key: give each of them the same key function (or none)'
  }
  return null
}

type Field = 'count' | 'ms' | 'maxWait' | 'optional' | 'required' | 'mode'

function controlProblem(
  name: string,
  control: unknown,
  fields: Record<string, Field>,
): string | null {
  if (control === undefined) return null
  const shape = `{ ${Object.entries(fields)
    .map(([f, t]) => (t === 'optional' || t === 'maxWait' ? `${f}?` : f))
    .join(', ')} }`
  if (control === null || typeof control !== 'object') return `flow.${name} must be ${shape}`
  for (const field of Object.keys(control)) {
    if (!(field in fields)) return `flow.${name} has no option ${field} (it is ${shape})`
  }
  for (const [field, type] of Object.entries(fields)) {
    const value = (control as Record<string, unknown>)[field]
    const label = `flow.${name}.${field}`
    if (type === 'count' && (!Number.isInteger(value) || (value as number) <= 0)) {
      return `${label} must be a positive integer, got ${String(value)}`
    }
    const optional = type === 'maxWait' && value === undefined
    if ((type === 'ms' || type === 'maxWait') && !optional && !positiveMs(value)) {
      return `${label} must be a positive finite number of ms, got ${String(value)}`
    }
    const keyMissing = type === 'required' ? typeof value !== 'function' : false
    const keyBad = type === 'optional' && value !== undefined && typeof value !== 'function'
    if (keyMissing || keyBad) return `${label} must be a function of the input returning a string`
    if (type === 'mode' && value !== 'skip' && value !== 'queue') {
      return `${label} must be 'skip' or 'queue', got ${String(value)}`
    }
  }
  return null
}

const positiveMs = (value: unknown): boolean =>
  typeof value === 'number' && Number.isFinite(value) && value > 0

/** The one key function of a definition's queue (concurrency's, rate's or singleton's). */
export const queueKeyOf = (flow: FlowControl | undefined): ((input: any) => string) | undefined =>
  flow?.singleton?.key ?? flow?.concurrency?.key ?? flow?.rate?.key

/**
 * The key a start's input maps to: the key function's answer, checked. A key function that
 * throws or answers something else than a non-empty string is the caller's bad input
 * (`INVALID_INPUT`, 400), and nothing is written.
 */
export function flowKey(
  label: string,
  keyOf: ((input: any) => unknown) | undefined,
  input: unknown,
): string {
  if (!keyOf) return ''
  let key: unknown
  try {
    key = keyOf(input)
  } catch (error) {
    throw new InvalidInputError(
      `${label}: the flow key function threw: ${(error as Error)?.message ?? String(error)}`,
      { reason: 'flow key threw' },
    )
  }
  if (typeof key !== 'string' || key.length === 0 || key.length > MAX_FLOW_KEY_LENGTH) {
    throw new InvalidInputError(
      `${label}: the flow key function must return a string of 1 to ${MAX_FLOW_KEY_LENGTH} characters, got ${typeof key === 'string' ? `${key.length} characters` : typeof key}`,
      { reason: 'flow key not a string' },
    )
  }
  return key
}

/** The queue of an effect's attempts (`concurrency` and `rate` of an effect definition). */
export const effectFlowQueue = (type: string): string => `effect:${type}`

/**
 * Checks an effect's `concurrency` and `rate` (docs/flow-control.md, "Effects"): positive
 * integers, key functions, and an effect whose attempts run in this process (a worker's or an
 * inline attempt is not started by the engine's admission). Returns the problem, or null.
 */
export function effectFlowProblem(effect: {
  concurrency?: unknown
  rate?: unknown
  execution?: string
  execute?: unknown
}): string | null {
  const { concurrency, rate } = effect
  if (concurrency === undefined && rate === undefined) return null
  if (effect.execution === 'inline' || effect.execution === 'worker' || !effect.execute) {
    return 'concurrency and rate apply to effects run in process (execution local, with execute)'
  }
  const positive = (value: unknown) => Number.isInteger(value) && (value as number) > 0
  const keyOk = (key: unknown) => key === undefined || typeof key === 'function'
  if (concurrency !== undefined) {
    const c = concurrency as { limit?: unknown; key?: unknown } | null
    if (c === null || typeof c !== 'object') return 'concurrency must be { limit, key? }'
    if (!positive(c.limit))
      return `concurrency.limit must be a positive integer, got ${String(c.limit)}`
    if (!keyOk(c.key)) return 'concurrency.key must be a function of the input returning a string'
  }
  if (rate !== undefined) {
    const r = rate as { limit?: unknown; periodMs?: unknown; key?: unknown } | null
    if (r === null || typeof r !== 'object') return 'rate must be { limit, periodMs, key? }'
    if (!positive(r.limit)) return `rate.limit must be a positive integer, got ${String(r.limit)}`
    if (!positive(r.periodMs))
      return `rate.periodMs must be a positive integer, got ${String(r.periodMs)}`
    if (!keyOk(r.key)) return 'rate.key must be a function of the input returning a string'
  }
  return null
}
