import { describe, expect, it } from 'vitest'
import type { AuthorizeContext, AuthorizeHook } from '../../src/http/authorize.js'
import { bearerAuth } from '../../src/http/bearer-auth.js'
import { ROUTES } from '../../src/http/routes/index.js'
import { memoryStore } from '../../src/stores/memory/memory-store.js'
import { fakeEngine } from './fake-engine.js'
import { json, makeHandler } from './helpers.js'
import { realEngine, START_RELEASE } from './real-engine.js'
import { type RouteSample, samplesOf } from './route-samples.js'

const TOKENS = {
  read: 'read-token-0123456789',
  write: 'write-token-012345678',
  worker: 'worker-token-01234567',
  operations: 'operations-token-0123',
}

type Case =
  | 'no hook'
  | 'no token'
  | 'wrong token, same length'
  | 'wrong token, other length'
  | 'right token'
const CASES: Case[] = [
  'no hook',
  'no token',
  'wrong token, same length',
  'wrong token, other length',
  'right token',
]

function authHeader(sample: RouteSample, c: Case): Record<string, string> {
  const right = TOKENS[sample.route.access]
  if (c === 'right token') return { authorization: `Bearer ${right}` }
  if (c === 'wrong token, same length')
    return { authorization: `Bearer ${'x'.repeat(right.length)}` }
  if (c === 'wrong token, other length') return { authorization: `Bearer ${right}-but-longer` }
  return {}
}

async function dump(store: ReturnType<typeof memoryStore>) {
  const runs = (await store.listRuns()).sort()
  return JSON.stringify(await Promise.all(runs.map((id) => store.read(id))))
}

type Subject = 'fake engine' | 'real engine'

/** One request on a fresh engine with run r1; the real one goes through createEngine's wiring. */
async function send(subject: Subject, sample: RouteSample, c: Case) {
  const authorize = c === 'no hook' ? undefined : bearerAuth(TOKENS)
  let store: ReturnType<typeof memoryStore>
  let fetch: (request: Request) => Promise<Response | null>
  let stop = async () => {}
  if (subject === 'fake engine') {
    store = memoryStore()
    const engine = fakeEngine(store)
    await engine.startRun({ kind: 'test', definitionName: 'echo', runId: 'r1' })
    fetch = makeHandler(engine, authorize ? { authorize } : {}).fetch
  } else {
    const real = realEngine(authorize ? { authorize } : {})
    store = real.store
    await real.engine.startRun({ ...START_RELEASE, runId: 'r1' })
    fetch = real.engine.fetch
    stop = () => real.engine.stop()
  }
  const before = await dump(store)
  const headers = { ...sample.headers, ...authHeader(sample, c) }
  const res = (await fetch(json(sample.method, sample.path, sample.body, headers)))!
  if (sample.sse && res.ok) await res.body!.cancel()
  const changed = (await dump(store)) !== before
  await stop()
  return { res, changed }
}

const SAMPLES: Record<Subject, RouteSample[]> = {
  'fake engine': samplesOf(ROUTES),
  // The real engine has no effect `e1`: a 404 there still proves auth let it through.
  'real engine': samplesOf(ROUTES, {
    params: { name: 'pendingApprovals' },
    bodies: { 'runs.start': { ...START_RELEASE, runId: 'new-run' } },
  }),
}

const closedByDefault = (s: RouteSample) =>
  s.route.access === 'worker' || s.route.access === 'operations'

describe.each<Subject>(['fake engine', 'real engine'])(
  'auth matrix on the %s (every route × credential case, from the route table)',
  (subject) => {
    const samples = SAMPLES[subject]
    const rows = samples.flatMap((s) => CASES.map((c) => [s.label, c, s] as const))

    it('covers every route', () => {
      expect(new Set(samples.map((s) => s.route.name)).size).toBe(ROUTES.length)
    })

    it.each(rows)('%s — %s', async (_label, c, sample) => {
      const { res, changed } = await send(subject, sample, c)
      const allowed = c === 'right token' || (c === 'no hook' && !closedByDefault(sample))
      if (allowed) {
        const text = sample.sse ? '' : await res.clone().text()
        if (subject === 'fake engine') expect(res.status, text).toBeLessThan(300)
        else {
          expect([401, 403, 503], text).not.toContain(res.status)
          expect(res.status, text).toBeLessThan(500)
        }
        return
      }
      const body = await res.json()
      expect(changed).toBe(false)
      if (c === 'no hook') {
        expect(res.status).toBe(503)
        expect(body.error.code).toBe('NOT_CONFIGURED')
      } else {
        expect(res.status).toBe(401)
        expect(res.headers.get('www-authenticate')).toMatch(/^Bearer/)
        expect(body.error.code).toBe('UNAUTHORIZED')
      }
    })
  },
)

describe('authorize hook', () => {
  it('runs before body parsing and store access, with route, access and runId', async () => {
    const seen: AuthorizeContext[] = []
    const hook: AuthorizeHook = (_req, ctx) => {
      seen.push(ctx)
      return new Response('no', { status: 418 })
    }
    const engine = fakeEngine()
    const http = makeHandler(engine, { authorize: hook })
    const bad = new Request('http://x/runs/r9/events', {
      method: 'POST',
      body: '{not json',
      headers: { 'content-type': 'text/plain' },
    })
    const res = (await http.fetch(bad))!
    expect(res.status).toBe(418)
    expect(seen).toEqual([{ route: 'runs.signal', access: 'write', runId: 'r9' }])
    expect(engine.calls).toEqual([])
  })

  it('passes the identity to retryEffect and opens closed routes for custom hooks', async () => {
    const engine = fakeEngine()
    await engine.startRun({ kind: 'test', definitionName: 'echo', runId: 'r1' })
    const http = makeHandler(engine, {
      authorize: () => ({ identity: { user: 'ops@example.com' } }),
    })
    const res = (await http.fetch(json('POST', '/runs/r1/effects/e1/retry')))!
    expect(await res.json()).toMatchObject({ runId: 'r1', effectId: 'e1', state: { runId: 'r1' } })
    expect(engine.calls.find((c) => c.method === 'retryEffect')!.args).toEqual([
      'r1',
      'e1',
      { identity: { user: 'ops@example.com' } },
    ])
  })

  it('fails closed on odd results and on a throwing hook, revealing nothing', async () => {
    const engine = fakeEngine()
    const odd = makeHandler(engine, { authorize: (() => false) as unknown as AuthorizeHook })
    expect((await odd.fetch(json('GET', '/runs')))!.status).toBe(403)
    const throwing = makeHandler(engine, {
      authorize: () => {
        throw new Error('db at /var/secret down')
      },
    })
    const res = (await throwing.fetch(json('GET', '/runs')))!
    expect(res.status).toBe(500)
    expect(await res.text()).not.toContain('secret')
  })

  it('bearerAuth: levels without a token keep the default; stronger tokens open weaker levels', async () => {
    const engine = fakeEngine()
    await engine.startRun({ kind: 'test', definitionName: 'echo', runId: 'r1' })
    const http = makeHandler(engine, {
      authorize: bearerAuth({ write: 'w-token', operations: 'o-token' }),
    })
    expect((await http.fetch(json('GET', '/runs/r1')))!.status).toBe(200)
    const callback = (await http.fetch(
      json('POST', '/runs/r1/effects/e1/callback', { attempt: 1, kind: 'started' }),
    ))!
    expect(callback.status).toBe(503)
    const signal = (body: unknown, token: string) =>
      http.fetch(json('POST', '/runs/r1/events', body, { authorization: `Bearer ${token}` }))
    expect((await signal({ events: [{ type: 'x' }] }, 'o-token'))!.status).toBe(200)
    expect((await signal({ events: [{ type: 'x' }] }, 'w-token'))!.status).toBe(200)
    const rescan = (token: string) =>
      http.fetch(
        json('POST', '/operations/deadlines/rescan', undefined, {
          authorization: `Bearer ${token}`,
        }),
      )
    expect((await rescan('w-token'))!.status).toBe(401)
    expect(await (await rescan('o-token'))!.json()).toEqual({ scheduled: 3 })
    expect(() => bearerAuth({ read: '' })).toThrow(TypeError)
  })

  it('authorizes the debugger as read/debugger and hands it the request', async () => {
    const seen: AuthorizeContext[] = []
    const http = makeHandler(fakeEngine(), {
      authorize: (_r, ctx) => {
        seen.push(ctx)
        return true
      },
      debugger: {
        basePath: '/_skein',
        ui: {
          fetch: (req, { basePath }) => new Response(`${basePath} ${new URL(req.url).pathname}`),
        },
      },
    })
    const res = (await http.fetch(json('GET', '/_skein/app.js')))!
    expect(await res.text()).toBe('/_skein /_skein/app.js')
    expect(seen).toEqual([{ route: 'debugger', access: 'read', name: 'debugger' }])
    expect(await http.fetch(json('GET', '/_skeinx'))).toBeNull()
  })
})
