import { createEngineClient } from 'skein/client'
import { afterEach, describe, expect, it } from 'vitest'
import { bearerAuth } from '../../src/http/bearer-auth.js'
import type { Engine, ServerHandle } from '../../src/runtime/engine-types.js'
import { json } from './helpers.js'
import { realEngine, START_RELEASE } from './real-engine.js'

const engines: Engine[] = []
afterEach(async () => {
  await Promise.all(engines.splice(0).map((e) => e.stop()))
})

function setup(options: Parameters<typeof realEngine>[0] = {}) {
  const subject = realEngine(options)
  engines.push(subject.engine)
  return subject
}

const call = async (engine: Engine, req: Request) => {
  const res = (await engine.fetch(req))!
  return { status: res.status, body: await res.json() }
}

describe('routes through the real engine (engine.fetch, workflow + approval)', () => {
  it('start → gate → approval signal (idempotent) → completed, with every read route', async () => {
    const { engine } = setup()
    const started = await call(
      engine,
      json('POST', '/runs', { ...START_RELEASE, input: { topic: 'Skein' }, runId: 'w1' }),
    )
    expect(started.status).toBe(200)
    expect(started.body).toMatchObject({ runId: 'w1', state: { status: 'running' } })

    const pending = await call(engine, json('GET', '/runs/w1/projections/pendingApprovals'))
    expect(pending.body).toMatchObject({ runId: 'w1', name: 'pendingApprovals' })
    const approvalId = pending.body.value.items[0].approvalId

    const decide = json(
      'POST',
      '/runs/w1/events',
      { events: [{ type: 'approval.decided', payload: { approvalId, outcome: 'approve' } }] },
      { 'idempotency-key': 'decide-1' },
    )
    const decided = await call(engine, decide)
    expect(decided.body.state).toMatchObject({ status: 'completed', output: { published: true } })
    const tail = decided.body.state.lastSeq
    const again = await call(
      engine,
      json(
        'POST',
        '/runs/w1/events',
        { events: [{ type: 'approval.decided', payload: { approvalId, outcome: 'approve' } }] },
        { 'idempotency-key': 'decide-1' },
      ),
    )
    expect(again.body.state.lastSeq).toBe(tail)

    const events = await call(engine, json('GET', '/runs/w1/events?fromSeq=1&limit=2'))
    expect(events.body.events.map((e: { seq: number }) => e.seq)).toEqual([1, 2])
    expect((await call(engine, json('GET', '/runs/w1'))).body.state.status).toBe('completed')
    expect((await call(engine, json('GET', '/runs'))).body).toEqual({ runIds: ['w1'] })
    expect((await call(engine, json('GET', '/runs/summaries'))).body.runs[0]).toMatchObject({
      runId: 'w1',
      status: 'completed',
      kind: 'workflow',
      definitionName: 'release',
    })
    expect(
      (await call(engine, json('GET', '/runs/w1/threads'))).body.threads.length,
    ).toBeGreaterThan(0)
    const status = (await call(engine, json('GET', '/runs/w1/status'))).body
    expect(status).toMatchObject({ runId: 'w1', status: 'completed', tail })
    expect(Object.keys(status).sort()).toEqual([
      'deadlines',
      'effects',
      'head',
      'runId',
      'status',
      'tail',
      'threads',
      'waits',
    ])
    const effects = (await call(engine, json('GET', '/runs/w1/effects'))).body.effects
    expect(effects.map((e: { type: string }) => e.type)).toContain('docs.publish')
    const replay = (await call(engine, json('GET', '/runs/w1/replay?seq=2'))).body
    expect(replay).toMatchObject({ runId: 'w1', step: { seq: 2 } })
    expect((await call(engine, json('POST', '/runs/w1/wake'))).body.state.lastSeq).toBe(tail)
    expect((await call(engine, json('GET', '/runs/w1/projections/nope'))).status).toBe(404)
  })

  it('maps engine errors: unknown run, unknown definition, start conflict', async () => {
    const { engine } = setup()
    expect((await call(engine, json('GET', '/runs/ghost/status'))).body.error.code).toBe(
      'RUN_NOT_FOUND',
    )
    const noDef = await call(
      engine,
      json('POST', '/runs', { kind: 'workflow', definitionName: 'nope' }),
    )
    expect([noDef.status, noDef.body.error.code]).toEqual([404, 'DEFINITION_NOT_FOUND'])
    await call(
      engine,
      json('POST', '/runs', { ...START_RELEASE, runId: 'w2', idempotencyKey: 'a' }),
    )
    const same = await call(
      engine,
      json('POST', '/runs', { ...START_RELEASE, runId: 'w2' }, { 'idempotency-key': 'a' }),
    )
    expect(same.status).toBe(200)
    const conflict = await call(
      engine,
      json('POST', '/runs', { ...START_RELEASE, runId: 'w2', idempotencyKey: 'b' }),
    )
    expect(conflict.status).toBe(409)
    // A body key and a header key that differ are a mistake in the request, not a choice.
    const twoKeys = await call(
      engine,
      json(
        'POST',
        '/runs',
        { ...START_RELEASE, runId: 'w2', idempotencyKey: 'b' },
        { 'idempotency-key': 'a' },
      ),
    )
    expect([twoKeys.status, twoKeys.body.error.code]).toEqual([400, 'INVALID_REQUEST'])
  })

  it('operations and worker routes: 503 by default, enabled by bearerAuth', async () => {
    const closed = setup().engine
    expect((await call(closed, json('POST', '/operations/deadlines/rescan'))).status).toBe(503)
    const { engine } = setup({ authorize: bearerAuth({ operations: 'ops', worker: 'wk' }) })
    const ops = { authorization: 'Bearer ops' }
    expect(
      (await call(engine, json('POST', '/operations/deadlines/rescan', undefined, ops))).body,
    ).toEqual({ scheduled: expect.any(Number) })
    await call(
      engine,
      json('POST', '/runs', { kind: 'workflow', definitionName: 'broken', runId: 'b1' }),
    )
    await (await engine.runtime).idle()
    const effects = (await call(engine, json('GET', '/runs/b1/effects'))).body.effects
    const effectId = effects[0].effectId
    const retried = await call(
      engine,
      json('POST', `/runs/b1/effects/${encodeURIComponent(effectId)}/retry`, undefined, ops),
    )
    expect([200, 409]).toContain(retried.status)
    if (retried.status === 200) expect(retried.body).toMatchObject({ runId: 'b1', effectId })
    const callback = await call(
      engine,
      json(
        'POST',
        `/runs/b1/effects/${encodeURIComponent(effectId)}/callback`,
        { attempt: 99, kind: 'heartbeat' },
        { authorization: 'Bearer wk' },
      ),
    )
    expect(callback.status).toBeLessThan(500)
  })

  it('client streamRun and subscribeEvents against engine.fetch and engine.serve', async () => {
    const { engine } = setup()
    const inProcess = createEngineClient({
      baseUrl: 'http://e',
      fetch: async (r) => (await engine.fetch(r))!,
    })
    const stream = inProcess.streamRun({ ...START_RELEASE, input: { topic: 'x' } })
    const types: string[] = []
    for await (const event of stream) types.push(event.type)
    const result = await stream.result
    expect(result.runId).toBe(stream.runId)
    expect(types.length).toBe(result.state.lastSeq)
    expect(types).toContain('approval.requested')

    const server: ServerHandle = await engine.serve({ port: 0 })
    const client = createEngineClient({ baseUrl: server.url })
    const seen: string[] = []
    let resolve!: () => void
    const done = new Promise<void>((r) => (resolve = r))
    const stop = client.subscribeEvents(stream.runId, (e) => {
      seen.push(e.type)
      if (e.type === 'runtime.run.completed') resolve()
    })
    const pending = await client.project<{ items: Array<{ approvalId: string }> }>(
      stream.runId,
      'pendingApprovals',
    )
    const decided = await client.signal(stream.runId, [
      {
        type: 'approval.decided',
        payload: { approvalId: pending.value.items[0].approvalId, outcome: 'reject' },
      },
    ])
    expect(decided.state.status).toBe('completed')
    await done
    stop()
    expect(seen.slice(0, types.length)).toEqual(types)
    // stop() closes the server and any stream still open.
  })
})
