// Declared signals and the typed client over a real server: a signal a workflow declares is
// validated by its schema before anything is written (400 INVALID_EVENT over HTTP, the same
// error embedded), the schema's output is what the run records, and `getRun`/`result` with a
// definition check the run is of it.
import { createEngine, type Engine, payload, type ServerHandle } from 'skein'
import { ClientError, createEngineClient } from 'skein/client'
import { defineWorkflow, workflow } from 'skein/workflow'
import { afterEach, describe, expect, it } from 'vitest'
import { z } from 'zod'

const order = defineWorkflow({
  name: 'order',
  input: z.object({ sku: z.string() }),
  signals: { 'order.paid': z.object({ cents: z.number().int(), note: z.string().default('') }) },
  nodes: { paid: { run: (ctx) => ctx.waitFor('order.paid') } },
  output: ({ input, results }) => ({
    sku: input.sku,
    cents: results.paid.cents,
    note: results.paid.note,
  }),
})
const other = defineWorkflow({ name: 'other', nodes: { a: { run: () => 1 } } })
const definitions = [order, other] as const

let engine: Engine
let server: ServerHandle | undefined
afterEach(async () => {
  await server?.close()
  server = undefined
  await engine?.stop()
})

describe('declared signals', () => {
  it('embedded: a bad payload is INVALID_EVENT with nothing written; a good one records the schema output', async () => {
    engine = createEngine({ modules: [workflow({ definitions: [order, other] })] })
    const { runId } = await engine.start(order, { sku: 'a' })
    const before = (await engine.getEvents(runId)).length
    const refused = await engine
      .signal(runId, [{ type: 'order.paid', payload: { cents: 'five' } }])
      .catch((error) => error)
    expect(refused.code).toBe('INVALID_EVENT')
    expect(refused.message).toContain('workflow:order@v1')
    expect(await engine.getEvents(runId)).toHaveLength(before)

    // An event of another type is not checked by the schema (it is an application event).
    await engine.signal(runId, [{ type: 'app.note', payload: { any: true } }])
    const state = await engine.signal(runId, [{ type: 'order.paid', payload: { cents: 5 } }])
    expect(state.status).toBe('completed')
    expect(await engine.result(runId, order)).toEqual({ sku: 'a', cents: 5, note: '' })
    const paid = (await engine.getEvents(runId)).find((e) => e.type === 'order.paid')
    expect(paid?.payload).toEqual({ cents: 5, note: '' })
  })

  it('embedded: getRun and result with another definition are INVALID_REQUEST', async () => {
    engine = createEngine({ modules: [workflow({ definitions: [order, other] })] })
    const { runId } = await engine.start(other)
    expect((await engine.getRun(runId, other)).output).toEqual({ a: 1 })
    const wrong = await engine.getRun(runId, order).catch((error) => error)
    expect(wrong.code).toBe('INVALID_REQUEST')
    expect(wrong.message).toContain('workflow:other')
    expect((await engine.result(runId, order).catch((error) => error)).code).toBe('INVALID_REQUEST')
  })

  it('a signal declared with payload<T>() is refused at composition: it would check nothing', async () => {
    const typeOnly = defineWorkflow({
      name: 'type-only',
      signals: { 'order.paid': payload<{ cents: number }>() },
      nodes: { a: { run: (ctx) => ctx.waitFor('order.paid') } },
    })
    expect(() => createEngine({ modules: [workflow({ definitions: [typeOnly] })] })).toThrow(
      /signal order\.paid needs a schema that validates/,
    )
  })

  it('over HTTP: the typed client starts by name, a bad signal is a 400 with nothing written, result is typed', async () => {
    engine = createEngine({ modules: [workflow({ definitions: [order, other] })] })
    server = await engine.serve({ port: 0 })
    const client = createEngineClient<typeof definitions>({ baseUrl: server.url })
    const { runId } = await client.startRun({
      kind: 'workflow',
      definitionName: 'order',
      input: { sku: 'b' },
    })
    const before = (await client.getEvents(runId)).events.length
    const refused = await client
      .signal(runId, [{ type: 'order.paid', payload: { cents: 1.5 } }] as never)
      .catch((error) => error)
    expect(ClientError.is(refused)).toBe(true)
    expect(refused.status).toBe(400)
    expect(refused.code).toBe('INVALID_EVENT')
    expect((await client.getEvents(runId)).events).toHaveLength(before)

    await client.signal(runId, [{ type: 'order.paid', payload: { cents: 7, note: 'ok' } }])
    const output = await client.result(runId, 'order', { timeoutMs: 10_000 })
    expect(output).toEqual({ sku: 'b', cents: 7, note: 'ok' })
    expect((await client.getRun(runId, order)).state.output?.cents).toBe(7)
    const wrong = await client.getRun(runId, 'other').catch((error) => error)
    expect(wrong.code).toBe('INVALID_REQUEST')
    expect((await client.result(runId, 'other').catch((error) => error)).code).toBe(
      'INVALID_REQUEST',
    )
  })
})
