import { InvalidRequestError } from '../../core/errors.js'
import type { ForkOptions } from '../../core/fork-types.js'
import { jsonResponse } from '../error-response.js'
import type { Route } from '../route-types.js'
import { expectObject, optionalId } from '../validate.js'

export const forkRoutes: Route[] = [
  {
    // `{ atSeq | atNode, input?, runId? }`: a new run from the run's log before the cut
    // (docs/operating-runs.md, "Fork"); the engine checks the cut before anything is written.
    method: 'POST',
    path: '/runs/:id/fork',
    name: 'runs.fork',
    access: 'operations',
    handle: async (ctx) => {
      const body = expectObject(await ctx.body(), ['atSeq', 'atNode', 'input', 'runId'])
      const options: ForkOptions = {}
      if (body.atSeq !== undefined) {
        if (typeof body.atSeq !== 'number') throw new InvalidRequestError('atSeq must be a number')
        options.atSeq = body.atSeq
      }
      if (body.atNode !== undefined) {
        if (typeof body.atNode !== 'string') {
          throw new InvalidRequestError('atNode must be a string')
        }
        options.atNode = body.atNode
      }
      if (body.input !== undefined) options.input = body.input
      const runId = optionalId(body, 'runId')
      if (runId !== undefined) options.runId = runId
      return jsonResponse(await ctx.engine.fork(ctx.params.id, options))
    },
  },
]
