import { describe, expect, it } from 'vitest'
import { ROUTES } from '../../src/http/routes/index.js'
import { memoryStore } from '../../src/stores/memory/memory-store.js'
import { fakeEngine } from './fake-engine.js'
import { BASE, makeHandler } from './helpers.js'
import { samplesOf } from './route-samples.js'

// A query parameter a route does not declare is a typo or a feature the server lacks: either
// way, ignoring it answers a different question than the one asked (issue 25:
// `/runs/summaries?state=running` returned every run). Each route declares its parameters.

async function setup() {
  const store = memoryStore()
  const engine = fakeEngine(store)
  await engine.startRun({ kind: 'test', definitionName: 'echo', runId: 'r1' })
  // Worker and operations routes are open here so they reach the check too.
  const http = makeHandler(engine, { authorize: () => true })
  const dump = async () => JSON.stringify(await store.read('r1'))
  return { http, dump }
}

const send = (http: { fetch(r: Request): Promise<Response | null> }, sample: any, path: string) =>
  http.fetch(
    new Request(BASE + path, {
      method: sample.method,
      headers: {
        ...sample.headers,
        ...(sample.body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      body: sample.body === undefined ? undefined : JSON.stringify(sample.body),
    }),
  )

describe('unknown query parameters', () => {
  it.each(samplesOf(ROUTES).map((s) => [s.label, s] as const))(
    '%s refuses one with 400 INVALID_REQUEST and writes nothing',
    async (_label, sample) => {
      const { http, dump } = await setup()
      const before = await dump()
      const path = `${sample.path}${sample.path.includes('?') ? '&' : '?'}fromseq=1`
      const res = (await send(http, sample, path))!
      expect(res.status).toBe(400)
      const { error } = await res.json()
      expect(error.code).toBe('INVALID_REQUEST')
      expect(error.message).toContain('fromseq')
      expect(error.details).toEqual({
        unknown: ['fromseq'],
        allowed: sample.route.query ?? [],
      })
      expect(await dump()).toBe(before)
    },
  )

  it('accepts the parameters a route declares', async () => {
    const { http } = await setup()
    const events = (await http.fetch(new Request(`${BASE}/runs/r1/events?fromSeq=2&limit=1`)))!
    expect(events.status).toBe(200)
    expect((await events.json()).events.map((e: { seq: number }) => e.seq)).toEqual([2])
    const replay = (await http.fetch(new Request(`${BASE}/runs/r1/replay?seq=2`)))!
    expect(replay.status).toBe(200)
  })

  it('names every unknown parameter once, whatever the order', async () => {
    const { http } = await setup()
    const res = (await http.fetch(new Request(`${BASE}/runs/r1?b=1&a=2&b=3&fromSeq=1`)))!
    expect(res.status).toBe(400)
    expect((await res.json()).error.details).toEqual({
      unknown: ['b', 'a', 'fromSeq'],
      allowed: [],
    })
  })
})
