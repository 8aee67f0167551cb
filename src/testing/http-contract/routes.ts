import { describe, expect } from 'vitest'
import { expectNotSupported, type HttpHostDifferences, unsupported } from './differences.js'
import type { HostCase } from './host-world.js'
import { START_RELEASE } from './samples.js'

const decide = (approvalId: string, outcome: string) => ({
  events: [{ type: 'approval.decided', payload: { approvalId, outcome } }],
})

/** Every route's answer and shape, the error table, and idempotent starts and signals. */
export function routeCases(test: HostCase, differences: HttpHostDifferences): void {
  describe('routes', () => {
    test('serves health; a path outside the API is not its own', async (w) => {
      await w.boot()
      const health = await w.call('GET', '/health')
      expect([health.status, health.body]).toEqual([200, { ok: true }])
      for (const path of ['/app/page', '/']) {
        const res = await w.request(path)
        // In process the handler leaves it to the app (null); a server answers a JSON 404.
        if (w.transport === 'in-process') expect(res).toBeNull()
        else {
          expect(res!.status).toBe(404)
          expect((await res!.json()).error.code).toBe('NOT_FOUND')
        }
      }
    })

    test('start → gate → approval signal (idempotent) → completed, with every read route', async (w) => {
      await w.boot()
      const started = await w.call('POST', '/runs', {
        ...START_RELEASE,
        input: { topic: 'Skein' },
        runId: 'w1',
      })
      expect(started.status).toBe(200)
      expect(started.body).toMatchObject({ runId: 'w1', state: { status: 'running' } })
      expect(Object.keys(started.body).sort()).toEqual(['runId', 'state', 'threadId'])
      expect(typeof started.body.threadId).toBe('string')

      const pending = await w.call('GET', '/runs/w1/projections/pendingApprovals')
      expect(pending.body).toMatchObject({ runId: 'w1', name: 'pendingApprovals' })
      const approvalId = pending.body.value.items[0].approvalId

      const key = { 'idempotency-key': 'decide-1' }
      const decided = await w.call('POST', '/runs/w1/events', decide(approvalId, 'approve'), key)
      expect(decided.body.state).toMatchObject({ status: 'completed', output: { published: true } })
      const tail = decided.body.state.lastSeq
      const again = await w.call('POST', '/runs/w1/events', decide(approvalId, 'approve'), key)
      expect([again.status, again.body.state.lastSeq]).toEqual([200, tail])
      const conflict = await w.call('POST', '/runs/w1/events', decide(approvalId, 'reject'), key)
      expect([conflict.status, conflict.body.error.code]).toEqual([409, 'IDEMPOTENCY_CONFLICT'])

      const events = await w.call('GET', '/runs/w1/events?fromSeq=1&limit=2')
      expect(events.body.runId).toBe('w1')
      expect(events.body.events.map((e: { seq: number }) => e.seq)).toEqual([1, 2])
      expect((await w.call('GET', '/runs/w1')).body).toMatchObject({
        runId: 'w1',
        state: { status: 'completed', lastSeq: tail },
      })
      const list = await w.call('GET', '/runs')
      if (unsupported(differences, 'runs.list')) expectNotSupported(list)
      else expect(list.body).toEqual({ runIds: ['w1'] })
      const summaries = await w.call('GET', '/runs/summaries')
      if (unsupported(differences, 'runs.summaries')) expectNotSupported(summaries)
      else {
        expect(summaries.body.runs[0]).toMatchObject({
          runId: 'w1',
          status: 'completed',
          kind: 'workflow',
          definitionName: 'release',
        })
      }
      const threads = (await w.call('GET', '/runs/w1/threads')).body
      expect(threads.runId).toBe('w1')
      expect(threads.threads.map((t: { threadId: string }) => t.threadId)).toEqual([
        started.body.threadId,
      ])
      const status = (await w.call('GET', '/runs/w1/status')).body
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
      const effects = (await w.call('GET', '/runs/w1/effects')).body
      expect(effects.runId).toBe('w1')
      expect(effects.effects.map((e: { type: string }) => e.type)).toContain('suite.publish')
      const replay = (await w.call('GET', '/runs/w1/replay?seq=2')).body
      expect(replay).toMatchObject({ runId: 'w1', step: { seq: 2, event: { seq: 2 } } })
      expect((await w.call('GET', `/runs/w1/replay?seq=${tail + 1}`)).body).toEqual({
        runId: 'w1',
        step: null,
      })
      const woken = await w.call('POST', '/runs/w1/wake')
      expect(woken.body).toMatchObject({ runId: 'w1', state: { lastSeq: tail } })
      const definitions = (await w.call('GET', '/definitions')).body.definitions
      expect(definitions).toContainEqual(
        expect.objectContaining({ kind: 'workflow', name: 'release', defaultVersion: 'v1' }),
      )
    })

    test('maps errors to the table: unknown run, definition, projection and effect', async (w) => {
      await w.boot({ authorize: () => true }) // operations routes open, to reach the effect
      const missing = await w.call('GET', '/runs/nope')
      expect(missing.status).toBe(404)
      expect(missing.body).toEqual({
        error: { code: 'RUN_NOT_FOUND', message: 'run nope not found', details: { runId: 'nope' } },
      })
      expect((await w.call('GET', '/runs/ghost/status')).body.error.code).toBe('RUN_NOT_FOUND')
      const noDef = await w.call('POST', '/runs', { kind: 'workflow', definitionName: 'nope' })
      expect([noDef.status, noDef.body.error.code]).toEqual([404, 'DEFINITION_NOT_FOUND'])
      await w.call('POST', '/runs', { ...START_RELEASE, runId: 'w1' })
      const noProjection = await w.call('GET', '/runs/w1/projections/nope')
      expect([noProjection.status, noProjection.body.error.code]).toEqual([
        404,
        'PROJECTION_NOT_FOUND',
      ])
      const noEffect = await w.call('POST', '/runs/w1/effects/nope/retry')
      expect([noEffect.status, noEffect.body.error.code]).toEqual([404, 'EFFECT_NOT_FOUND'])
    })

    test('answers 405 with Allow for a wrong method on a known path', async (w) => {
      await w.boot()
      const res = await w.call('DELETE', '/runs')
      expect(res.status).toBe(405)
      expect(res.headers.get('allow')).toBe('POST, GET')
      expect(res.body.error.code).toBe('METHOD_NOT_ALLOWED')
      const summaries = await w.call('POST', '/runs/summaries')
      expect(summaries.status).toBe(405)
      expect(summaries.headers.get('allow')).toBe('GET')
    })

    test('idempotent starts: same runId and key; a key alone; conflicts and two keys refused', async (w) => {
      await w.boot()
      const first = await w.call('POST', '/runs', {
        ...START_RELEASE,
        runId: 'w2',
        idempotencyKey: 'a',
      })
      const same = await w.call(
        'POST',
        '/runs',
        { ...START_RELEASE, runId: 'w2' },
        { 'idempotency-key': 'a' },
      )
      expect(same.status).toBe(200)
      expect(same.body.threadId).toBe(first.body.threadId)
      expect(same.body.state.lastSeq).toBe(first.body.state.lastSeq)
      const conflict = await w.call('POST', '/runs', {
        ...START_RELEASE,
        runId: 'w2',
        idempotencyKey: 'b',
      })
      expect(conflict.status).toBe(409)
      expect(conflict.body.error).toMatchObject({
        code: 'START_CONFLICT',
        details: { fields: ['idempotencyKey'] },
      })
      // A body key and a header key that differ are a mistake in the request, not a choice.
      const twoKeys = await w.call(
        'POST',
        '/runs',
        { ...START_RELEASE, runId: 'w2', idempotencyKey: 'b' },
        { 'idempotency-key': 'a' },
      )
      expect([twoKeys.status, twoKeys.body.error.code]).toEqual([400, 'INVALID_REQUEST'])
      const keyed = await w.call('POST', '/runs', { ...START_RELEASE, idempotencyKey: 'only-key' })
      const retried = await w.call('POST', '/runs', {
        ...START_RELEASE,
        idempotencyKey: 'only-key',
      })
      expect(retried.body.runId).toBe(keyed.body.runId)
      const other = await w.call('POST', '/runs', {
        ...START_RELEASE,
        input: { topic: 'other' },
        idempotencyKey: 'only-key',
      })
      expect([other.status, other.body.error.code]).toEqual([409, 'START_CONFLICT'])
      expect((await w.call('GET', `/runs/${keyed.body.runId}/events`)).body.events).toHaveLength(
        keyed.body.state.lastSeq,
      )
    })
  })
}
