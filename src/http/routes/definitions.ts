import type { VersionInfo } from '../../core/api-types.js'
import { SkeinError } from '../../core/errors.js'
import { jsonResponse } from '../error-response.js'
import type { Route } from '../route-types.js'

export const definitionRoutes: Route[] = [
  {
    method: 'GET',
    path: '/definitions',
    name: 'definitions.list',
    access: 'read',
    // Each registered version with its runs not yet terminal, and the versions with runs that
    // this host does not register (docs/deploys.md, "The drift report").
    handle: async (ctx) => {
      const [definitions, report] = await Promise.all([
        ctx.engine.listDefinitions(),
        // An actor host keeps no store-wide run counts (NOT_SUPPORTED): the list alone then.
        ctx.engine.versions().catch((error) => {
          if (SkeinError.is(error) && error.code === 'NOT_SUPPORTED') return undefined
          throw error
        }),
      ])
      if (!report) return jsonResponse({ definitions })
      const of = (kind: string, name: string, version: string): VersionInfo | undefined =>
        report.versions.find((v) => v.kind === kind && v.name === name && v.version === version)
      return jsonResponse({
        definitions: definitions.map((d) => ({
          ...d,
          versions: d.versions.map((v) => {
            const drift = of(d.kind, d.name, v.version)
            return drift
              ? { ...v, activeRuns: drift.activeRuns, safeToDelete: drift.safeToDelete }
              : v
          }),
        })),
        unregistered: report.versions.filter((v) => !v.registered),
      })
    },
  },
  {
    method: 'GET',
    path: '/definitions/versions',
    name: 'definitions.versions',
    access: 'read',
    handle: async (ctx) => jsonResponse(await ctx.engine.versions()),
  },
  {
    method: 'GET',
    path: '/queues',
    name: 'queues.list',
    access: 'read',
    handle: async (ctx) => jsonResponse({ queues: await ctx.engine.queues() }),
  },
]
