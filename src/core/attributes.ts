import { InvalidRequestError } from './errors.js'

/** An attribute's value: what a run is searched by (docs/operating-runs.md, "Attributes"). */
export type RunAttributeValue = string | number | boolean

/** A run's attributes by name. */
export type RunAttributes = Record<string, RunAttributeValue>

/** What a definition declares for each attribute its runs may carry. */
export type RunAttributeType = 'string' | 'number' | 'boolean'

/** A definition's attribute declarations: name to type. */
export type RunAttributeTypes = Record<string, RunAttributeType>

/**
 * An attribute filter of `listRunSummaries`: a value (equality), or an inclusive range of a
 * number or string attribute (`{ min: 100, max: 200 }`; either end may be left out).
 */
export type RunAttributeFilter =
  | RunAttributeValue
  | { min?: number | string; max?: number | string }

/** One checked attribute filter as stores receive it (`eq`, or `min`/`max`). */
export interface StoreAttributeFilter {
  name: string
  eq?: RunAttributeValue
  min?: number | string
  max?: number | string
}

/** At most this many attributes on one run. */
export const MAX_RUN_ATTRIBUTES = 16
/** At most this many attribute filters in one query. */
export const MAX_ATTRIBUTE_FILTERS = 4
/** A string attribute's value is at most this many characters. */
export const MAX_ATTRIBUTE_STRING = 256
const NAME = /^[A-Za-z_][A-Za-z0-9_]{0,63}$/
const TYPES: ReadonlySet<string> = new Set(['string', 'number', 'boolean'])

/** A definition's declarations, checked once when it is registered (null: it is fine). */
export function attributeTypesProblem(types: unknown): string | null {
  if (types === undefined) return null
  if (types === null || typeof types !== 'object' || Array.isArray(types)) {
    return 'attributes must be an object of attribute name to type'
  }
  const entries = Object.entries(types)
  if (entries.length > MAX_RUN_ATTRIBUTES) {
    return `attributes declares ${entries.length} attributes; at most ${MAX_RUN_ATTRIBUTES}`
  }
  for (const [name, type] of entries) {
    if (!NAME.test(name)) return `attribute name "${name}" is not a name (${NAME.source})`
    if (!TYPES.has(type)) return `attribute ${name}: type must be string, number or boolean`
  }
  return null
}

const typeOf = (value: unknown): RunAttributeType | null =>
  typeof value === 'string'
    ? 'string'
    : typeof value === 'number'
      ? 'number'
      : typeof value === 'boolean'
        ? 'boolean'
        : null

/** One value against its declared type (a string within bounds, a finite number). */
function checkValue(label: string, name: string, type: RunAttributeType, value: unknown): void {
  if (typeOf(value) !== type) {
    throw new InvalidRequestError(
      `${label}: attribute ${name} must be a ${type}, got ${JSON.stringify(value) ?? String(value)}`,
      { attribute: name, type },
    )
  }
  if (type === 'number' && !Number.isFinite(value)) {
    throw new InvalidRequestError(`${label}: attribute ${name} must be a finite number`, {
      attribute: name,
    })
  }
  if (type === 'string' && (value as string).length > MAX_ATTRIBUTE_STRING) {
    throw new InvalidRequestError(
      `${label}: attribute ${name} is longer than ${MAX_ATTRIBUTE_STRING} characters`,
      { attribute: name },
    )
  }
}

/**
 * Attributes a start or the run sets, checked against what the run's definition declares:
 * every name declared, every value of its type. `allowNull` (updates): null removes one.
 */
export function checkRunAttributes(
  label: string,
  declared: RunAttributeTypes | undefined,
  attributes: unknown,
  allowNull = false,
): Record<string, RunAttributeValue | null> {
  if (attributes === null || typeof attributes !== 'object' || Array.isArray(attributes)) {
    throw new InvalidRequestError(`${label}: attributes must be an object of name to value`)
  }
  const out: Record<string, RunAttributeValue | null> = {}
  for (const [name, value] of Object.entries(attributes)) {
    const type = declared?.[name]
    if (type === undefined) {
      throw new InvalidRequestError(
        `${label}: attribute ${name} is not declared by the definition (declared: ${Object.keys(declared ?? {}).join(', ') || 'none'})`,
        { attribute: name },
      )
    }
    if (!(allowNull && value === null)) checkValue(label, name, type, value)
    out[name] = value as RunAttributeValue | null
  }
  return out
}

/** `current` with `changes` applied (null removes); undefined when nothing is left. */
export function mergeAttributes(
  current: RunAttributes | undefined,
  changes: Record<string, RunAttributeValue | null>,
): RunAttributes | undefined {
  const next: RunAttributes = { ...current }
  for (const [name, value] of Object.entries(changes)) {
    if (value === null) delete next[name]
    else next[name] = value
  }
  return Object.keys(next).length > 0 ? next : undefined
}

/**
 * A query's attribute filters checked against the types the engine's definitions declare
 * (`types`: name to type, one type per name): names declared, values and ends of the type,
 * ranges only on numbers and strings.
 */
export function normalizeAttributeFilters(
  filters: unknown,
  types: ReadonlyMap<string, RunAttributeType>,
): StoreAttributeFilter[] {
  if (filters === null || typeof filters !== 'object' || Array.isArray(filters)) {
    throw new InvalidRequestError('attributes must be an object of attribute name to filter')
  }
  const entries = Object.entries(filters)
  if (entries.length === 0 || entries.length > MAX_ATTRIBUTE_FILTERS) {
    throw new InvalidRequestError(
      `attributes must filter on 1 to ${MAX_ATTRIBUTE_FILTERS} attributes`,
    )
  }
  return entries.map(([name, filter]) => {
    const type = types.get(name)
    if (type === undefined) {
      throw new InvalidRequestError(
        `attribute ${name} is declared by no registered definition (declared: ${[...types.keys()].join(', ') || 'none'})`,
        { attribute: name },
      )
    }
    if (filter === null || typeof filter !== 'object') {
      checkValue('attributes filter', name, type, filter)
      return { name, eq: filter as RunAttributeValue }
    }
    const { min, max, ...rest } = filter as { min?: unknown; max?: unknown }
    if (Object.keys(rest).length > 0 || (min === undefined && max === undefined)) {
      throw new InvalidRequestError(
        `attribute ${name}: a range filter is { min?, max? } with at least one end`,
        { attribute: name },
      )
    }
    if (type === 'boolean') {
      throw new InvalidRequestError(`attribute ${name} is a boolean: filter it by a value`, {
        attribute: name,
      })
    }
    const range: StoreAttributeFilter = { name }
    if (min !== undefined) {
      checkValue('attributes filter', name, type, min)
      range.min = min as number | string
    }
    if (max !== undefined) {
      checkValue('attributes filter', name, type, max)
      range.max = max as number | string
    }
    return range
  })
}

/** True when `attributes` passes every filter (stores that filter in memory use it). */
export function attributesMatch(
  attributes: RunAttributes | undefined,
  filters: readonly StoreAttributeFilter[],
): boolean {
  return filters.every(({ name, eq, min, max }) => {
    const value = attributes?.[name]
    if (value === undefined) return false
    if (eq !== undefined) return value === eq
    if (typeof value === 'boolean') return false
    return (min === undefined || value >= min) && (max === undefined || value <= max)
  })
}
