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
]
const PARAMETERS = SUMMARY_PARAMETERS

/**
 * The query of `GET /runs/summaries`. Unknown, repeated and empty parameters are a 400; the
 * values themselves are checked by the engine (`normalizeSummaryQuery`), before any store read.
 */
export function summaryQueryOf(url: URL): SummaryQuery {
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
  return query
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
