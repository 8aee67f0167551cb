import type { RunAttributeFilter, RunAttributeType, RunAttributeValue } from '../core/attributes.js'
import type { RunStatus } from '../core/envelope.js'
import { InvalidRequestError } from '../core/errors.js'
import type { SummaryOrder, SummaryQuery } from '../core/ports.js'
import { intQuery } from './validate.js'

const TIMES = ['createdFrom', 'createdBefore', 'updatedFrom', 'updatedBefore'] as const
export const SUMMARY_PARAMETERS = [
  'status',
  'definitionName',
  'definitionVersion',
  'runIdPrefix',
  ...TIMES,
  'order',
  'limit',
  'cursor',
  'attr',
]
const PARAMETERS = SUMMARY_PARAMETERS

/**
 * The query of `GET /runs/summaries`. Unknown, repeated and empty parameters are a 400; the
 * values themselves are checked by the engine (`normalizeSummaryQuery`), before any store read.
 */
export function summaryQueryOf(
  url: URL,
  attributeTypes: ReadonlyMap<string, RunAttributeType> = new Map(),
): SummaryQuery {
  const params = url.searchParams
  const unknown = [...new Set(params.keys())].filter((name) => !PARAMETERS.includes(name))
  if (unknown.length > 0) {
    throw new InvalidRequestError(`unknown query parameter(s): ${unknown.join(', ')}`, {
      unknown,
      allowed: PARAMETERS,
    })
  }
  const query: SummaryQuery = {}
  const limit = intQuery(url, 'limit', 1)
  if (limit !== undefined) query.limit = limit
  // Several statuses: `status=failed,cancelled`.
  const status = single(params, 'status')
  if (status !== undefined) query.status = status.split(',') as RunStatus[]
  for (const name of ['definitionName', 'definitionVersion'] as const) {
    const value = single(params, name)
    if (value !== undefined) query[name] = value
  }
  for (const name of TIMES) {
    const value = single(params, name)
    if (value !== undefined) query[name] = timeOf(name, value)
  }
  const order = single(params, 'order')
  if (order !== undefined) query.order = order as SummaryOrder
  const cursor = single(params, 'cursor')
  if (cursor !== undefined) query.cursor = cursor
  const prefix = single(params, 'runIdPrefix')
  if (prefix !== undefined) query.runIdPrefix = prefix
  const attributes = params.getAll('attr')
  if (attributes.length > 0) query.attributes = attributeFiltersOf(attributes, attributeTypes)
  return query
}

const ATTRIBUTE_FILTER = /^([A-Za-z_][A-Za-z0-9_]{0,63})(>=|<=|=)(.*)$/s

/**
 * `attr=customer=c1` (equality), `attr=amount>=100`, `attr=amount<=200` (an inclusive range):
 * each value read as the type the engine's definitions declare for the name, so `42` is a
 * number for a number attribute and text for a string one.
 */
function attributeFiltersOf(
  texts: readonly string[],
  types: ReadonlyMap<string, RunAttributeType>,
): Record<string, RunAttributeFilter> {
  const out: Record<string, RunAttributeFilter> = {}
  for (const text of texts) {
    const match = ATTRIBUTE_FILTER.exec(text)
    if (!match) {
      throw new InvalidRequestError(
        'attr must be name=value, name>=value or name<=value (e.g. attr=customer=c1)',
        { attr: text.slice(0, 64) },
      )
    }
    const [, name, op, raw] = match
    const value = attributeValueOf(name, raw, types.get(name))
    const current = out[name]
    if (op === '=') {
      if (current !== undefined) throw new InvalidRequestError(`attr ${name} is given twice`)
      out[name] = value
      continue
    }
    const range = current === undefined ? {} : current
    if (typeof range !== 'object' || (op === '>=' ? 'min' : 'max') in range) {
      throw new InvalidRequestError(`attr ${name} is given twice`)
    }
    if (typeof value === 'boolean') {
      throw new InvalidRequestError(`attribute ${name} is a boolean: filter it by a value`)
    }
    out[name] = { ...range, [op === '>=' ? 'min' : 'max']: value }
  }
  return out
}

/** A query's text as the attribute's declared type (an undeclared name stays text: refused later). */
function attributeValueOf(
  name: string,
  text: string,
  type: RunAttributeType | undefined,
): RunAttributeValue {
  if (type === 'number') {
    const value = text.trim() === '' ? Number.NaN : Number(text)
    if (!Number.isFinite(value)) {
      throw new InvalidRequestError(`attribute ${name} is a number, got "${text.slice(0, 64)}"`)
    }
    return value
  }
  if (type === 'boolean') {
    if (text !== 'true' && text !== 'false') {
      throw new InvalidRequestError(`attribute ${name} is a boolean: true or false`)
    }
    return text === 'true'
  }
  return text
}

const ISO_DATE = /^\d{4}-\d{2}-\d{2}/

/** Epoch ms, or an ISO 8601 time (`2026-11-24T00:00:00Z`). */
function timeOf(name: string, text: string): number {
  const at = /^\d{1,15}$/.test(text)
    ? Number(text)
    : ISO_DATE.test(text)
      ? Date.parse(text)
      : Number.NaN
  if (!Number.isFinite(at) || at < 0) {
    throw new InvalidRequestError(`${name} must be epoch ms or an ISO 8601 time`, { [name]: text })
  }
  return at
}

function single(params: URLSearchParams, name: string): string | undefined {
  const all = params.getAll(name)
  if (all.length === 0) return undefined
  if (all.length > 1) throw new InvalidRequestError(`query parameter ${name} is repeated`)
  if (all[0] === '') throw new InvalidRequestError(`query parameter ${name} is empty`)
  return all[0]
}
