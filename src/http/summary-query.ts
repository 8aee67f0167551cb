import type { RunStatus } from '../core/envelope.js'
import { InvalidRequestError } from '../core/errors.js'
import type { SummaryQuery } from '../core/ports.js'
import { intQuery } from './validate.js'

const PARAMETERS = ['status', 'limit', 'cursor', 'runIdPrefix']

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
  const status = single(params, 'status')
  if (status !== undefined) query.status = status as RunStatus
  const cursor = single(params, 'cursor')
  if (cursor !== undefined) query.cursor = cursor
  const prefix = single(params, 'runIdPrefix')
  if (prefix !== undefined) query.runIdPrefix = prefix
  return query
}

function single(params: URLSearchParams, name: string): string | undefined {
  const all = params.getAll(name)
  if (all.length === 0) return undefined
  if (all.length > 1) throw new InvalidRequestError(`query parameter ${name} is repeated`)
  if (all[0] === '') throw new InvalidRequestError(`query parameter ${name} is empty`)
  return all[0]
}
