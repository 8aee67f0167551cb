import type { ArchivedRun } from '../../core/archive-types.js'
import { InvalidRequestError } from '../../core/errors.js'
import type { MigrateOptions } from '../../core/migration-types.js'
import type { BulkOptions, BulkResult, RunFilter } from '../../runtime/bulk.js'
import { jsonResponse } from '../error-response.js'
import type { Route, RouteContext } from '../route-types.js'
import { expectObject } from '../validate.js'

/**
 * `POST /operations/runs/retry|wake|cancel|migrate`: `{ filter, dryRun?, maxRuns?, batchSize? }`
 * (and `toVersion` to migrate), the engine's bulk action (docs/operating-runs.md, "Bulk
 * actions"); the filter's values are checked by it.
 */
export async function bulk(
  ctx: RouteContext,
  action: 'retry' | 'wake' | 'cancel' | 'migrate',
): Promise<Response> {
  const fields = ['filter', 'dryRun', 'maxRuns', 'batchSize']
  const body = expectObject(
    await ctx.body(),
    action === 'migrate' ? [...fields, 'toVersion'] : fields,
  )
  const filter = body.filter
  if (filter === null || typeof filter !== 'object' || Array.isArray(filter)) {
    throw new InvalidRequestError(
      'filter must be an object of run filters (status, definitionName, …)',
    )
  }
  const options: BulkOptions = {}
  if (body.dryRun !== undefined) {
    if (typeof body.dryRun !== 'boolean') throw new InvalidRequestError('dryRun must be a boolean')
    options.dryRun = body.dryRun
  }
  for (const name of ['maxRuns', 'batchSize'] as const) {
    if (body[name] === undefined) continue
    if (typeof body[name] !== 'number') throw new InvalidRequestError(`${name} must be a number`)
    options[name] = body[name]
  }
  const { engine } = ctx
  const runs = filter as RunFilter
  const many = { retry: engine.retryMany, wake: engine.wakeMany, cancel: engine.cancelMany }
  const result: BulkResult =
    action === 'migrate'
      ? await engine.migrateRuns(
          runs,
          { ...options, toVersion: body.toVersion as string },
          {
            identity: ctx.identity,
          },
        )
      : await many[action](runs, options)
  return jsonResponse(result)
}

export const operationRoutes: Route[] = [
  {
    method: 'POST',
    path: '/operations/deadlines/rescan',
    name: 'operations.rescan',
    access: 'operations',
    handle: async (ctx) => jsonResponse({ scheduled: await ctx.engine.recoverDeadlines() }),
  },
  {
    method: 'GET',
    path: '/operations/projectors',
    name: 'operations.projectors',
    access: 'operations',
    handle: async (ctx) => jsonResponse({ projectors: await ctx.engine.projectors() }),
  },
  {
    method: 'POST',
    path: '/operations/runs/retry',
    name: 'operations.runs.retry',
    access: 'operations',
    handle: (ctx) => bulk(ctx, 'retry'),
  },
  {
    method: 'POST',
    path: '/operations/runs/wake',
    name: 'operations.runs.wake',
    access: 'operations',
    handle: (ctx) => bulk(ctx, 'wake'),
  },
  {
    method: 'POST',
    path: '/operations/runs/migrate',
    name: 'operations.runs.migrate',
    access: 'operations',
    handle: (ctx) => bulk(ctx, 'migrate'),
  },
  {
    // One run to another version of its definition (docs/deploys.md, "Migrating runs").
    method: 'POST',
    path: '/runs/:id/migrate',
    name: 'runs.migrate',
    access: 'operations',
    handle: async (ctx) => {
      const body = expectObject(await ctx.body(), ['toVersion', 'dryRun'])
      const options = { toVersion: body.toVersion, dryRun: body.dryRun } as MigrateOptions
      if (body.dryRun === undefined) delete options.dryRun
      const migration = await ctx.engine.migrateRun(ctx.params.id, options, {
        identity: ctx.identity,
      })
      return jsonResponse({ migration })
    },
  },
  {
    method: 'GET',
    path: '/operations/retention',
    name: 'operations.retention',
    access: 'operations',
    handle: async (ctx) => jsonResponse({ retention: await ctx.engine.retention() }),
  },
  {
    // An archived run back into the store (docs/data-lifecycle.md, "Restoring"); the engine
    // checks the run whole before writing anything.
    method: 'POST',
    path: '/operations/restore',
    name: 'operations.restore',
    access: 'operations',
    handle: async (ctx) => {
      const { run } = expectObject(await ctx.body(), ['run'])
      if (run === undefined) throw new InvalidRequestError('body must be { run: <archived run> }')
      return jsonResponse({ restored: await ctx.engine.restoreRun(run as unknown as ArchivedRun) })
    },
  },
]
