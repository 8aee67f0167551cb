import { InvalidRequestError } from '../../core/errors.js'
import type { Json, JsonObject } from '../../core/json.js'
import { SCHEDULE_FIELDS, type ScheduleOptions } from '../../runtime/schedule-spec.js'
import { jsonResponse } from '../error-response.js'
import type { Route, RouteContext } from '../route-types.js'
import { expectObject } from '../validate.js'

/**
 * The schedule's options as JSON: a start over HTTP names its definition ({ kind,
 * definitionName }) and its input is JSON (an input function is only for code). The engine
 * checks every field (INVALID_SCHEDULE), so a typo is refused, never dropped.
 */
const body = async (ctx: RouteContext): Promise<JsonObject> =>
  expectObject(await ctx.body(), SCHEDULE_FIELDS)

const timeOf = (body: JsonObject, key: string): number => {
  const value: Json | undefined = body[key]
  const at = typeof value === 'string' ? Date.parse(value) : value
  if (typeof at !== 'number' || !Number.isFinite(at)) {
    throw new InvalidRequestError(`body.${key} must be a time: epoch ms or an ISO 8601 string`)
  }
  return at
}

const name = (ctx: RouteContext) => ctx.params.schedule as string

/** Schedules (docs/schedules.md): read to list and look, operations to change. */
export const scheduleRoutes: Route[] = [
  {
    method: 'GET',
    path: '/schedules',
    name: 'schedules.list',
    access: 'read',
    handle: async (ctx) => jsonResponse({ schedules: await ctx.engine.schedules.list() }),
  },
  {
    method: 'POST',
    path: '/schedules',
    name: 'schedules.create',
    access: 'operations',
    handle: async (ctx) => {
      const options = (await body(ctx)) as unknown as ScheduleOptions
      return jsonResponse({ schedule: await ctx.engine.schedules.create(options) }, 201)
    },
  },
  {
    method: 'GET',
    path: '/schedules/:schedule',
    name: 'schedules.get',
    access: 'read',
    handle: async (ctx) => jsonResponse({ schedule: await ctx.engine.schedules.get(name(ctx)) }),
  },
  {
    method: 'POST',
    path: '/schedules/:schedule',
    name: 'schedules.update',
    access: 'operations',
    handle: async (ctx) => {
      const patch = await body(ctx)
      return jsonResponse({
        schedule: await ctx.engine.schedules.update(name(ctx), patch as never),
      })
    },
  },
  {
    method: 'DELETE',
    path: '/schedules/:schedule',
    name: 'schedules.delete',
    access: 'operations',
    handle: async (ctx) => {
      await ctx.engine.schedules.delete(name(ctx))
      return jsonResponse({ deleted: name(ctx) })
    },
  },
  {
    method: 'POST',
    path: '/schedules/:schedule/pause',
    name: 'schedules.pause',
    access: 'operations',
    handle: async (ctx) => jsonResponse({ schedule: await ctx.engine.schedules.pause(name(ctx)) }),
  },
  {
    method: 'POST',
    path: '/schedules/:schedule/resume',
    name: 'schedules.resume',
    access: 'operations',
    handle: async (ctx) => jsonResponse({ schedule: await ctx.engine.schedules.resume(name(ctx)) }),
  },
  {
    method: 'POST',
    path: '/schedules/:schedule/trigger',
    name: 'schedules.trigger',
    access: 'operations',
    handle: async (ctx) => jsonResponse(await ctx.engine.schedules.trigger(name(ctx))),
  },
  {
    method: 'POST',
    path: '/schedules/:schedule/backfill',
    name: 'schedules.backfill',
    access: 'operations',
    handle: async (ctx) => {
      const range = expectObject(await ctx.body(), ['from', 'to'])
      const from = timeOf(range, 'from')
      const to = timeOf(range, 'to')
      return jsonResponse(await ctx.engine.schedules.backfill(name(ctx), { from, to }))
    },
  },
]
