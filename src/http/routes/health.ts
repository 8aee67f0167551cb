import { StoreUnavailableError } from '../../core/errors.js'
import type { Engine } from '../../runtime/engine-types.js'
import { errorInfoOf, httpError, jsonResponse } from '../error-response.js'
import type { Route } from '../route-types.js'

/** How long a readiness check waits for the store before it answers 503. */
export const READY_TIMEOUT_MS = 2000

export const healthRoutes: Route[] = [
  {
    method: 'GET',
    path: '/health',
    name: 'health',
    access: 'read',
    query: ['ready'],
    handle: async (ctx) => {
      const ready = ctx.url.searchParams.get('ready')
      // Liveness: the process answers, whatever its store does.
      if (ready === null) return jsonResponse({ ok: true })
      if (ready !== '1' && ready !== 'true') {
        throw httpError('INVALID_REQUEST', `ready must be 1 or true, got "${ready}"`)
      }
      try {
        await storeAnswers(ctx.engine)
        return jsonResponse({ ok: true, ready: true })
      } catch (error) {
        const info = errorInfoOf(error)
        return jsonResponse(
          {
            ok: false,
            ready: false,
            error: {
              code: 'STORE_UNAVAILABLE',
              message: `the store did not answer a read (${info.code === 'INTERNAL' ? info.message : info.code})`,
            },
          },
          503,
        )
      }
    },
  },
]

/**
 * Readiness: the engine is ready and its store answers a read (the tail of a run that does not
 * exist) within READY_TIMEOUT_MS. An actor host has no one store (each run is its own cell):
 * there it checks that the host answers.
 */
async function storeAnswers(engine: Engine): Promise<void> {
  let timer: ReturnType<typeof setTimeout> | undefined
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new StoreUnavailableError(`no answer within ${READY_TIMEOUT_MS} ms`)),
      READY_TIMEOUT_MS,
    )
  })
  const probe = (async () => {
    await engine.ready()
    const store = await engine.store.catch((error: unknown) => {
      if ((error as { code?: string })?.code === 'NOT_SUPPORTED') return undefined
      throw error
    })
    await store?.tail('skein-readiness-probe')
  })()
  probe.catch(() => {}) // answered by the timeout already
  try {
    await Promise.race([probe, timeout])
  } finally {
    clearTimeout(timer)
  }
}
