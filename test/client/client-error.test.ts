import { createEngine, SkeinError } from 'skein'
import { ClientError, createEngineClient } from 'skein/client'
import { defineWorkflow, workflow } from 'skein/workflow'
import { describe, expect, it } from 'vitest'
import * as errors from '../../src/core/errors.js'
import { HTTP_STATUS_BY_CODE, httpStatusOf } from '../../src/http/wire/status.js'

describe('ClientError', () => {
  it('is a SkeinError with the server code, status and details', async () => {
    const flow = defineWorkflow({ name: 'noop', nodes: { a: { run: () => 1 } } })
    const engine = createEngine({ modules: [workflow({ definitions: [flow] })] })
    const client = createEngineClient({
      baseUrl: 'http://skein.local',
      fetch: async (request) =>
        (await engine.fetch(request)) ?? new Response(null, { status: 404 }),
    })
    const error = await client.getRun('missing').catch((e: unknown) => e)
    expect(error).toBeInstanceOf(SkeinError)
    expect(SkeinError.is(error)).toBe(true)
    expect(ClientError.is(error)).toBe(true)
    expect(error).toMatchObject({ name: 'ClientError', status: 404, code: 'RUN_NOT_FOUND' })
    expect((error as ClientError).toInfo()).toEqual({
      code: 'RUN_NOT_FOUND',
      message: expect.stringContaining('missing'),
      details: expect.anything(),
    })
    const refused = await client
      .startRun({ kind: 'workflow', definitionName: 'noop', input: { x: 1 }, runId: 'r1' })
      .then(() => client.startRun({ kind: 'workflow', definitionName: 'noop', runId: 'r1' }))
      .catch((e: unknown) => e)
    expect(refused).toMatchObject({ status: 409, code: 'START_CONFLICT' })
    await engine.stop()
  })

  it('is recognised across copies of the class (realm-safe brand), and nothing else is', () => {
    const brand = (symbol: string) => ({ [Symbol.for(symbol)]: true })
    expect(ClientError.is({ ...brand('skein.error'), ...brand('skein.clientError') })).toBe(true)
    expect(ClientError.is(new SkeinError('RUN_NOT_FOUND', 'x'))).toBe(false)
    expect(
      ClientError.is(Object.assign(new Error('x'), { name: 'ClientError', status: 1, code: 'X' })),
    ).toBe(false)
    expect(SkeinError.is(new ClientError(0, 'NETWORK_ERROR', 'offline'))).toBe(true)
  })
})

describe('the status table (http/wire/status.ts)', () => {
  it('has a status for the code of every engine error class', () => {
    const codes = Object.values(errors as Record<string, unknown>).flatMap((value) => {
      const code = (value as { code?: unknown }).code
      return typeof value === 'function' && typeof code === 'string' ? [code] : []
    })
    expect(codes.length).toBeGreaterThan(20)
    for (const code of codes) expect(HTTP_STATUS_BY_CODE[code], code).toBeTypeOf('number')
    expect(httpStatusOf('TERMINAL')).toBe(500)
    expect(httpStatusOf('A_MODULE_OWN_CODE')).toBe(500)
  })
})
