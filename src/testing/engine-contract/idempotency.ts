import { describe, expect } from 'vitest'
import { decision, pendingApprovals } from '../../modules/approval/index.js'
import { rejection } from '../rejection.js'
import type { ContractCase } from './case.js'
import { gated } from './definitions.js'

function nest(depth: number): unknown {
  let value: unknown = 1
  for (let i = 0; i < depth; i++) value = { v: value }
  return value
}

/** Idempotent start (by runId, by key) and idempotent, all-or-nothing signals. */
export function idempotencyCases(test: ContractCase): void {
  describe('idempotent start', () => {
    test('same runId, key and identity returns the existing run and appends nothing', async (w) => {
      const engine = await w.boot()
      const first = await engine.start(
        gated,
        { orderId: 'o1', amount: 5 },
        { runId: 'order-o1', idempotencyKey: 'k1' },
      )
      const tail = (await engine.getEvents('order-o1')).length
      const again = await engine.start(
        gated,
        { amount: 5, orderId: 'o1' },
        { runId: 'order-o1', idempotencyKey: 'k1' },
      )
      expect(again.runId).toBe(first.runId)
      expect(again.threadId).toBe(first.threadId)
      expect((await engine.getEvents('order-o1')).length).toBe(tail)
    })

    test('a different input or key is a START_CONFLICT naming the fields, nothing written', async (w) => {
      const engine = await w.boot()
      await engine.start(gated, { orderId: 'o1', amount: 5 }, { runId: 'r1', idempotencyKey: 'k1' })
      const tail = (await engine.getEvents('r1')).length
      const error = await rejection(
        engine.start(gated, { orderId: 'o1', amount: 6 }, { runId: 'r1', idempotencyKey: 'k2' }),
      )
      expect(error.code).toBe('START_CONFLICT')
      expect(error.details.fields).toEqual(['input', 'idempotencyKey'])
      expect((await engine.getEvents('r1')).length).toBe(tail)
    })

    test('a key without a runId returns the run that key created; another start under it conflicts', async (w) => {
      const engine = await w.boot()
      const first = await engine.start(gated, { orderId: 'o1', amount: 5 }, { idempotencyKey: 'k' })
      const tail = (await engine.getEvents(first.runId)).length
      const again = await engine.startRun({
        kind: 'workflow',
        definitionName: 'gated',
        input: { amount: 5, orderId: 'o1' },
        idempotencyKey: 'k',
      })
      expect(again.runId).toBe(first.runId)
      expect((await engine.getEvents(first.runId)).length).toBe(tail)
      const error = await rejection(
        engine.start(gated, { orderId: 'o2', amount: 5 }, { idempotencyKey: 'k' }),
      )
      expect(error.code).toBe('START_CONFLICT')
      expect(error.details.fields).toEqual(['input'])
      const other = await engine.start(
        gated,
        { orderId: 'o1', amount: 5 },
        { idempotencyKey: 'k2' },
      )
      expect(other.runId).not.toBe(first.runId)
      expect(await engine.listRuns()).toHaveLength(2)
      // A restarted process finds the run by its key too.
      const restarted = await w.restart()
      const retried = await restarted.start(
        gated,
        { orderId: 'o1', amount: 5 },
        { idempotencyKey: 'k' },
      )
      expect(retried.runId).toBe(first.runId)
      expect((await restarted.getEvents(first.runId)).length).toBe(tail)
    })

    test('startRun by kind and name, unknown definitions are DEFINITION_NOT_FOUND with nothing written', async (w) => {
      const engine = await w.boot()
      const { state } = await engine.startRun({
        kind: 'workflow',
        definitionName: 'gated',
        input: { orderId: 'a', amount: 1 },
        runId: 'byname',
      })
      expect(state.definitionVersion).toBe('v1')
      const error = await rejection(
        engine.startRun({ kind: 'workflow', definitionName: 'nope', runId: 'x1' }),
      )
      expect(error.code).toBe('DEFINITION_NOT_FOUND')
      expect(await engine.listRuns()).toEqual(['byname'])
    })

    test('invalid input is INVALID_INPUT before anything is written', async (w) => {
      const engine = await w.boot()
      // @ts-expect-error the schema types orderId as a string: JavaScript callers still get here
      const error = await rejection(engine.start(gated, { orderId: 1 }, { runId: 'bad' }))
      expect(error.code).toBe('INVALID_INPUT')
      expect(error.message).toMatch(/orderId/)
      expect(await engine.listRuns()).toEqual([])
    })
  })

  describe('idempotent signals', () => {
    test('a repeated key appends nothing: before and after completion, snapshots and trims', async (w) => {
      const engine = await w.boot({ trimAfterSnapshot: { keepSnapshots: 1 } })
      const { runId } = await engine.start(gated, { orderId: 'o1', amount: 5 })
      const note = { type: 'shop.note', payload: { text: 'hello' } }
      await engine.signal(runId, [note], { idempotencyKey: 'note-1' })
      const before = (await engine.getRun(runId)).lastSeq
      await engine.signal(runId, [note], { idempotencyKey: 'note-1' })
      expect((await engine.getRun(runId)).lastSeq).toBe(before)
      const [item] = (await engine.project(runId, pendingApprovals)).items
      const done = await engine.signal(runId, [decision(item.approvalId, 'approve')], {
        idempotencyKey: 'decide-1',
      })
      expect(done.status).toBe('completed')
      const bounds = await w.store.bounds(runId)
      expect(bounds.head).toBeGreaterThan(1) // trimmed behind the snapshot taken at completion
      const tail = bounds.tail
      await engine.signal(runId, [note], { idempotencyKey: 'note-1' })
      // The same key with another decision is a conflict now, not a silent no-op (decisions.md, "Decisions answer a pending gate").
      const conflict = await rejection(
        engine.signal(runId, [decision(item.approvalId, 'reject')], { idempotencyKey: 'decide-1' }),
      )
      expect(conflict.code).toBe('IDEMPOTENCY_CONFLICT')
      await engine.signal(runId, [decision(item.approvalId, 'approve')], {
        idempotencyKey: 'decide-1',
      })
      expect((await w.store.bounds(runId)).tail).toBe(tail)
      // a new key on a terminal run is recorded but wakes nothing
      const after = await engine.signal(runId, [note], { idempotencyKey: 'note-2' })
      // A keyed signal records its key and digest (runtime.signal.received) before its events.
      expect(after.lastSeq).toBe(tail + 2)
      expect(after.status).toBe('completed')
      // After a restart the keys still hold, from the trimmed log's snapshot.
      const restarted = await w.restart({ trimAfterSnapshot: { keepSnapshots: 1 } })
      await restarted.signal(runId, [note], { idempotencyKey: 'note-2' })
      const late = await rejection(
        restarted.signal(runId, [decision(item.approvalId, 'reject')], {
          idempotencyKey: 'decide-1',
        }),
      )
      expect(late.code).toBe('IDEMPOTENCY_CONFLICT')
      expect((await w.store.bounds(runId)).tail).toBe(tail + 2)
    })

    test('refuses runtime.* types, unknown catalog events, non-JSON and oversized payloads, writing nothing', async (w) => {
      const engine = await w.boot({ limits: { maxEventBytes: 1000 } })
      const { runId } = await engine.start(gated, { orderId: 'o1', amount: 5 })
      const tail = (await engine.getEvents(runId)).length
      const attempts: any[] = [
        [{ type: 'runtime.run.completed', payload: {} }],
        [{ type: 'approval.bogus', payload: {} }],
        [{ type: 'approval.decided', payload: { outcome: 'approve' } }],
        [{ type: 'suite.ping', payload: { n: 'not a number' } }],
        [{ type: 'app.x', payload: { when: new Date() } }],
        [{ type: 'app.x', payload: { big: 'x'.repeat(2000) } }],
        [{ type: 'app.x', payload: nest(70) }],
        [
          { type: 'app.ok', payload: {} },
          { type: '', payload: {} },
        ],
        [],
      ]
      for (const events of attempts) {
        const error = await rejection(engine.signal(runId, events))
        expect(error.code, JSON.stringify(events).slice(0, 80)).toBe('INVALID_EVENT')
      }
      const unknownThread = await rejection(
        engine.signal(runId, [{ type: 'app.x', threadId: 'nope' }]),
      )
      expect(unknownThread.code).toBe('INVALID_EVENT')
      expect((await engine.getEvents(runId)).length).toBe(tail)
      expect((await rejection(engine.getRun('missing'))).code).toBe('RUN_NOT_FOUND')
      expect((await rejection(engine.signal('missing', [{ type: 'app.x' }]))).code).toBe(
        'RUN_NOT_FOUND',
      )
    })
  })
}
