import fc from 'fast-check'
import { afterEach, describe, expect, it } from 'vitest'
import type { AuthorizeHook } from '../../src/http/authorize.js'
import { ROUTES } from '../../src/http/routes/index.js'
import type { Engine } from '../../src/runtime/engine-types.js'
import { badInputCorpus } from './bad-input-corpus.js'
import { BASE, makeHandler } from './helpers.js'
import { realEngine, START_RELEASE } from './real-engine.js'
import { samplesOf } from './route-samples.js'

// Worker/operations routes are open here so their input checks are exercised too.
const allowAll: AuthorizeHook = () => true

const engines: Engine[] = []
afterEach(async () => {
  await Promise.all(engines.splice(0).map((e) => e.stop()))
})

/** Run r1 (workflow `release`) through createEngine's wiring and the real wake loop. */
async function setup() {
  const real = realEngine({ authorize: allowAll, http: { cancelRoutes: true } })
  engines.push(real.engine)
  await real.engine.startRun({ ...START_RELEASE, runId: 'r1' })
  const dump = async () => {
    const runs = (await real.store.listRuns()).sort()
    return JSON.stringify({
      runs,
      events: await Promise.all(runs.map((id) => real.store.read(id))),
    })
  }
  return { engine: real.engine, http: { fetch: real.engine.fetch }, dump }
}

function expectProperError(status: number, body: string) {
  expect(status).toBeGreaterThanOrEqual(400)
  expect(status).toBeLessThan(500)
  const parsed = JSON.parse(body)
  expect(Object.keys(parsed)).toEqual(['error'])
  expect(typeof parsed.error.code).toBe('string')
  expect(parsed.error.code).toMatch(/^[A-Z_]+$/)
  expect(typeof parsed.error.message).toBe('string')
  expect(body).not.toMatch(/\n\s+at |node_modules|\/work\//)
}

describe('bad-input corpus', () => {
  const corpus = badInputCorpus()

  it('has at least 200 requests', () => {
    expect(corpus.length).toBeGreaterThanOrEqual(200)
  })

  it('answers every one with a proper 4xx error and leaves the log unchanged (real engine)', async () => {
    const { http, dump } = await setup()
    const before = await dump()
    const statuses = new Map<number, number>()
    for (const bad of corpus) {
      const res = (await http.fetch(
        new Request(BASE + bad.path, {
          method: bad.method,
          headers: bad.headers,
          body: bad.body as BodyInit | undefined,
        }),
      ))!
      expect(res, bad.name).not.toBeNull()
      const text = await res.text()
      try {
        expectProperError(res.status, text)
      } catch (error) {
        throw new Error(`${bad.name}: ${res.status} ${text.slice(0, 200)}\n${error}`)
      }
      statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1)
    }
    expect(await dump()).toBe(before)
    console.log(
      `SCORE http-bad-input engine=real requests=${corpus.length} 5xx=0 statuses=${JSON.stringify(Object.fromEntries(statuses))}`,
    )
  })

  it('refuses a streamed body over the limit while it streams', async () => {
    const { engine, dump } = await setup()
    const http = makeHandler(engine, { maxRequestBytes: 1024 })
    const before = await dump()
    let pulled = 0
    const body = new ReadableStream<Uint8Array>({
      pull(controller) {
        pulled++
        controller.enqueue(
          new TextEncoder().encode(`{"events":[{"type":"x","payload":"${'y'.repeat(300)}`),
        )
        if (pulled > 1000) controller.close()
      },
    })
    const req = new Request(`${BASE}/runs/r1/events`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body,
      duplex: 'half',
    } as RequestInit)
    const res = (await http.fetch(req))!
    expect(res.status).toBe(413)
    expect((await res.json()).error.code).toBe('PAYLOAD_TOO_LARGE')
    expect(pulled).toBeLessThan(10)
    expect(await dump()).toBe(before)
  })
})

describe('bad-input generator (fast-check, all routes)', () => {
  const samples = samplesOf(ROUTES).filter((s) => !s.sse)
  const segment = fc.oneof(
    fc.string({ maxLength: 12 }),
    fc.constantFrom('%2F', '%2e%2e', '..', '.', '%', '%zz', '%00', 'r1', 'ghost', 'e1', 'count'),
  )
  const query = fc.oneof(
    fc.string({ maxLength: 8 }),
    fc.integer().map(String),
    fc.constantFrom('1e3', '-0', '1.0'),
  )
  const body = fc.oneof(
    fc.jsonValue({ maxDepth: 4 }).map((v) => JSON.stringify(v)),
    fc.string({ maxLength: 40 }),
    fc.record({ events: fc.jsonValue({ maxDepth: 3 }) }).map((v) => JSON.stringify(v)),
    fc
      .record({
        kind: fc.jsonValue({ maxDepth: 1 }),
        definitionName: fc.jsonValue({ maxDepth: 1 }),
      })
      .map((v) => JSON.stringify(v)),
    fc
      .record({ attempt: fc.jsonValue({ maxDepth: 1 }), kind: fc.jsonValue({ maxDepth: 1 }) })
      .map((v) => JSON.stringify(v)),
  )
  const contentType = fc.constantFrom(
    'application/json',
    'text/plain',
    'application/json; charset=utf-8',
    '',
  )

  it('never answers 5xx; every error is a proper body; errors write nothing (real engine)', async () => {
    const { http, dump } = await setup()
    let requests = 0
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...samples),
        fc.array(segment, { maxLength: 2 }),
        fc.dictionary(fc.constantFrom('fromSeq', 'limit', 'seq', 'live'), query),
        fc.option(body, { nil: undefined }),
        contentType,
        fc.constantFrom('GET', 'POST', 'PUT'),
        async (sample, extra, params, text, ct, method) => {
          const path = [sample.path.split('?')[0], ...extra.map(encodeURIComponent)].join('/')
          const qs = new URLSearchParams(params).toString()
          const m = extra.length === 0 ? sample.method : method
          const before = await dump()
          const request = new Request(`${BASE}${path}${qs ? `?${qs}` : ''}`, {
            method: m,
            headers: ct ? { 'content-type': ct } : {},
            body: m === 'GET' ? undefined : text,
          })
          const res = await http.fetch(request)
          requests++
          if (res === null) {
            // Only when URL normalization (`/health/..` → `/`) left the API.
            expect(new URL(request.url).pathname).not.toMatch(/^\/(runs|health|operations)(\/|$)/)
            return
          }
          if (res.headers.get('content-type')?.startsWith('text/event-stream')) {
            await res.body!.cancel()
            return
          }
          const out = await res.text()
          expect(res.status, out).toBeLessThan(500)
          if (res.status >= 400) {
            expectProperError(res.status, out)
            expect(await dump()).toBe(before)
          }
        },
      ),
      { numRuns: 600, seed: 20260101 },
    )
    console.log(`SCORE http-fuzz engine=real requests=${requests} 5xx=0`)
  })
})
