import { describe, expect, it } from 'vitest'
import { fakeEngine } from './fake-engine.js'
import { json, makeHandler } from './helpers.js'

describe('routes (fake engine, in-process)', () => {
  const setup = () => {
    const engine = fakeEngine()
    return { engine, http: makeHandler(engine) }
  }

  it('serves health and returns null outside the API', async () => {
    const { http } = setup()
    const res = await http.fetch(json('GET', '/health'))
    expect(res!.status).toBe(200)
    expect(await res!.json()).toEqual({ ok: true })
    expect(await http.fetch(json('GET', '/app/page'))).toBeNull()
    expect(await http.fetch(json('GET', '/'))).toBeNull()
  })

  it('starts a run, reads it, signals it and lists it', async () => {
    const { http } = setup()
    const started = await http.fetch(
      json('POST', '/runs', { kind: 'test', definitionName: 'echo', input: { a: 1 }, runId: 'r1' }),
    )
    expect(started!.status).toBe(200)
    const body = await started!.json()
    expect(body).toMatchObject({ runId: 'r1', state: { status: 'running', lastSeq: 3 } })
    expect(typeof body.threadId).toBe('string')

    const got = await (await http.fetch(json('GET', '/runs/r1')))!.json()
    expect(got).toMatchObject({ runId: 'r1', state: { lastSeq: 3 } })

    const signalled = await http.fetch(
      json('POST', '/runs/r1/events', { events: [{ type: 'finish' }] }),
    )
    expect(await signalled!.json()).toMatchObject({
      runId: 'r1',
      state: { status: 'completed', lastSeq: 4 },
    })

    const events = await (await http.fetch(
      json('GET', '/runs/r1/events?fromSeq=2&limit=2'),
    ))!.json()
    expect(events.events.map((e: { seq: number }) => e.seq)).toEqual([2, 3])
    expect(await (await http.fetch(json('GET', '/runs')))!.json()).toEqual({ runIds: ['r1'] })
    const summaries = await (await http.fetch(json('GET', '/runs/summaries')))!.json()
    expect(summaries.runs[0]).toMatchObject({ runId: 'r1', status: 'completed' })
  })

  it('maps engine errors to the table', async () => {
    const { http } = setup()
    const missing = await http.fetch(json('GET', '/runs/nope'))
    expect(missing!.status).toBe(404)
    expect(await missing!.json()).toEqual({
      error: { code: 'RUN_NOT_FOUND', message: 'run nope not found', details: { runId: 'nope' } },
    })
    const noDef = await http.fetch(json('POST', '/runs', { kind: 'x', definitionName: 'y' }))
    expect(noDef!.status).toBe(404)
    expect((await noDef!.json()).error.code).toBe('DEFINITION_NOT_FOUND')
  })

  it('answers 405 with Allow for a wrong method on a known path', async () => {
    const { http } = setup()
    const res = await http.fetch(json('DELETE', '/runs'))
    expect(res!.status).toBe(405)
    expect(res!.headers.get('allow')).toBe('POST, GET')
    expect((await res!.json()).error.code).toBe('METHOD_NOT_ALLOWED')
    const summaries = await http.fetch(json('POST', '/runs/summaries'))
    expect(summaries!.status).toBe(405)
    expect(summaries!.headers.get('allow')).toBe('GET')
  })
})
