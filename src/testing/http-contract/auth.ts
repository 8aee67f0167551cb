import { describe, expect } from 'vitest'
import { type AuthorizeContext, type AuthorizeHook, bearerAuth } from '../../index.js'
import { nap } from '../engine-contract/definitions.js'
import { expectNotSupported, type HttpHostDifferences, unsupported } from './differences.js'
import { type HostCase, read } from './host-world.js'
import { dumpRuns, type RouteSample, routeSamples, SAMPLE_LABELS, seedRuns } from './samples.js'

const TOKENS = {
  read: 'read-token-0123456789',
  write: 'write-token-012345678',
  worker: 'worker-token-01234567',
  operations: 'operations-token-0123',
}
const OPS = { authorization: `Bearer ${TOKENS.operations}` }

const CASES = [
  'no hook',
  'no token',
  'wrong token, same length',
  'wrong token, other length',
  'right token',
] as const
type Case = (typeof CASES)[number]

function authHeader(sample: RouteSample, c: Case): Record<string, string> {
  const right = TOKENS[sample.route.access as keyof typeof TOKENS]
  if (c === 'right token') return { authorization: `Bearer ${right}` }
  if (c === 'wrong token, same length')
    return { authorization: `Bearer ${'x'.repeat(right.length)}` }
  if (c === 'wrong token, other length') return { authorization: `Bearer ${right}-but-longer` }
  return {}
}

const closedByDefault = (s: RouteSample) =>
  s.route.access === 'worker' || s.route.access === 'operations'

/** Authorization ahead of every route (docs/http.md, "Authorization"). */
export function authCases(test: HostCase, differences: HttpHostDifferences): void {
  describe('auth matrix (every route × credential case, from the route table)', () => {
    for (const label of SAMPLE_LABELS) {
      for (const c of CASES) {
        test(`${label} — ${c}`, async (w) => {
          await w.boot(c === 'no hook' ? {} : { authorize: bearerAuth(TOKENS) })
          const credential = c === 'no hook' ? {} : OPS
          const samples = routeSamples(await seedRuns(w, credential))
          expect(samples.map((s) => s.label)).toEqual(SAMPLE_LABELS)
          const sample = samples.find((s) => s.label === label)!
          const before = await dumpRuns(w, credential)
          const headers = { ...sample.headers, ...authHeader(sample, c) }
          const init: RequestInit = { method: sample.method, headers }
          if (sample.body !== undefined) {
            init.body = JSON.stringify(sample.body)
            init.headers = { 'content-type': 'application/json', ...headers }
          }
          const raw = (await w.request(sample.path, init))!
          const allowed = c === 'right token' || (c === 'no hook' && !closedByDefault(sample))
          if (allowed && sample.sse && raw.ok) {
            expect(raw.headers.get('content-type')).toMatch(/^text\/event-stream/)
            await raw.body?.cancel()
            return
          }
          const res = await read(raw)
          if (allowed) {
            if (unsupported(differences, sample.route.name)) expectNotSupported(res)
            else if (sample.authorized) {
              expect(res.status, res.text).toBe(sample.authorized.status)
              expect(res.body.error.code).toBe(sample.authorized.code)
            } else expect(res.status, res.text).toBeLessThan(300)
            return
          }
          expect(await dumpRuns(w, credential)).toBe(before)
          if (c === 'no hook') {
            expect(res.status).toBe(503)
            expect(res.body.error.code).toBe('NOT_CONFIGURED')
          } else {
            expect(res.status).toBe(401)
            expect(res.headers.get('www-authenticate')).toMatch(/^Bearer/)
            expect(res.body.error.code).toBe('UNAUTHORIZED')
          }
        })
      }
    }
  })

  describe('authorize hook', () => {
    test('runs before body parsing, with route, access and runId; a Response denies', async (w) => {
      const seen: AuthorizeContext[] = []
      const hook: AuthorizeHook = (request, ctx) => {
        if (request.headers.get('x-deny') === null) return true
        seen.push(ctx)
        return new Response('no', { status: 418 })
      }
      await w.boot({ authorize: hook })
      await seedRuns(w)
      const before = await dumpRuns(w)
      const bad = (await w.request('/runs/r1/events', {
        method: 'POST',
        body: '{not json',
        headers: { 'content-type': 'text/plain', 'x-deny': '1' },
      }))!
      expect(bad.status).toBe(418)
      expect(await bad.text()).toBe('no')
      expect(seen).toEqual([{ route: 'runs.signal', access: 'write', runId: 'r1' }])
      expect(await dumpRuns(w)).toBe(before)
    })

    test("the hook's identity is what the log records as the operator and the decider", async (w) => {
      await w.boot({ authorize: () => ({ identity: { user: 'ops@example.com' } }) })
      const { effectId } = await seedRuns(w)
      const retried = await w.call('POST', `/runs/r2/effects/${encodeURIComponent(effectId)}/retry`)
      expect(retried.status).toBe(200)
      expect(retried.body).toMatchObject({ runId: 'r2', effectId, state: { runId: 'r2' } })
      const { events } = (await w.call('GET', '/runs/r2/events')).body
      const scheduled = events.find((e: any) => e.type === 'runtime.effect.retry.scheduled')
      expect(scheduled).toMatchObject({
        origin: 'operator',
        payload: { reason: 'operator', by: { user: 'ops@example.com' } },
      })
      const { value } = (await w.call('GET', '/runs/r1/projections/pendingApprovals')).body
      const decided = await w.call('POST', '/runs/r1/events', {
        events: [
          {
            type: 'approval.decided',
            payload: { approvalId: value.items[0].approvalId, outcome: 'approve' },
          },
        ],
      })
      expect(decided.status).toBe(200)
      const after = (await w.call('GET', '/runs/r1/events')).body.events
      const decision = after.find((e: any) => e.type === 'approval.decided')
      expect(decision.payload.by).toEqual({ user: 'ops@example.com' })
    })

    test('fails closed on odd results and on a throwing hook, revealing nothing', async (w) => {
      let mode: 'odd' | 'throw' = 'odd'
      await w.boot({
        authorize: (() => {
          if (mode === 'odd') return false
          throw new Error('db at /var/secret down')
        }) as unknown as AuthorizeHook,
      })
      const odd = await w.call('GET', '/runs/r1')
      expect(odd.status).toBe(403)
      expect(odd.body.error.code).toBe('FORBIDDEN')
      mode = 'throw'
      const thrown = await w.call('GET', '/runs/r1')
      expect(thrown.status).toBe(500)
      expect(thrown.text).not.toContain('secret')
    })

    test('bearerAuth: levels without a token keep the default; stronger tokens open weaker levels', async (w) => {
      await w.boot({ authorize: bearerAuth({ write: 'w-token', operations: 'o-token' }) })
      const as = (token: string) => ({ authorization: `Bearer ${token}` })
      await seedRuns(w, as('w-token'))
      // One run with a durable deadline (a timer) for the rescan to find.
      await w.call('POST', '/runs', { kind: 'workflow', definitionName: nap.name }, as('w-token'))
      expect((await w.call('GET', '/runs/r1')).status).toBe(200)
      const callback = await w.call('POST', '/runs/r1/effects/e1/callback', {
        attempt: 1,
        kind: 'started',
      })
      expect(callback.status).toBe(503)
      const signal = (token: string) =>
        w.call('POST', '/runs/r1/events', { events: [{ type: 'app.x' }] }, as(token))
      expect((await signal('o-token')).status).toBe(200)
      expect((await signal('w-token')).status).toBe(200)
      const rescan = (token: string) =>
        w.call('POST', '/operations/deadlines/rescan', undefined, as(token))
      expect((await rescan('w-token')).status).toBe(401)
      const rescanned = await rescan('o-token')
      expect(rescanned.status).toBe(200)
      expect(rescanned.body).toEqual({ scheduled: 1 })
    })
  })
}
