import { InvalidInputError } from './errors.js'

/**
 * Flow control of a definition's runs (docs/flow-control.md). `concurrency`: at most `limit`
 * runs of the definition (all its versions) admitted and not yet finished at once, per `key`
 * of the start's input when it is given (one queue otherwise).
 */
export interface FlowControl<I = any> {
  concurrency?: { limit: number; key?: (input: I) => string }
}

/** What a start records about its place in a queue (`runtime.run.queued`, `runtime.run.admitted`). */
export interface FlowPlace {
  /** The queue: `<kind>:<name>` of the definition (every version shares it). */
  queue: string
  /** The concurrency key ('' without a key function). */
  key: string
  /** The start's priority (higher first within its key; default 0). */
  priority: number
  /** The earliest admission (epoch ms; the start's time unless `startAt` delayed it). */
  startAt: number
}

/** The queue of a definition's runs: every version of one kind and name shares it. */
export const flowQueue = (d: { kind: string; name: string }): string => `${d.kind}:${d.name}`

/** The longest key a key function may return (it is stored and indexed). */
export const MAX_FLOW_KEY_LENGTH = 256

/**
 * Checks a definition's `flow` when the engine is composed (a bad limit is the author's code,
 * refused before anything runs). Returns the problem, or null.
 */
export function flowProblem(flow: unknown): string | null {
  if (flow === undefined) return null
  if (flow === null || typeof flow !== 'object') return 'flow must be an object'
  const known = new Set(['concurrency'])
  for (const field of Object.keys(flow)) {
    if (!known.has(field)) return `flow has no option ${field} (known: ${[...known].join(', ')})`
  }
  const concurrency = (flow as FlowControl).concurrency
  if (concurrency === undefined) return null
  if (concurrency === null || typeof concurrency !== 'object') {
    return 'flow.concurrency must be { limit, key? }'
  }
  const { limit, key } = concurrency
  if (!Number.isInteger(limit) || limit <= 0) {
    return `flow.concurrency.limit must be a positive integer, got ${String(limit)}`
  }
  if (key !== undefined && typeof key !== 'function') {
    return 'flow.concurrency.key must be a function of the input returning a string'
  }
  return null
}

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
