import { describe, expect } from 'vitest'
import { decision, pendingApprovals } from '../../modules/approval/index.js'
import type { ContractCase } from './case.js'
import {
  CHAIN,
  child,
  failing,
  falling,
  flaky,
  nap,
  parent,
  pure,
  release,
  skipping,
  waiter,
} from './definitions.js'

/** DAG workflows: pure nodes, gates, timers, retries, failure policies, children, waits. */
export function workflowCases(test: ContractCase): void {
  describe('workflows', () => {
    test('pure nodes run in order and complete, recording each node', async (w) => {
      const engine = await w.boot()
      const { runId, state } = await engine.start(pure, { n: 1 })
      expect(state.status).toBe('completed')
      expect(state.output).toEqual({ a: 2, b: 4 })
      const events = await engine.getEvents(runId)
      expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i + 1))
      expect(events.map((e) => e.type)).toEqual([
        'runtime.run.started',
        'runtime.thread.started',
        'workflow.node.started',
        'workflow.node.finished',
        'workflow.node.started',
        'workflow.node.finished',
        'runtime.thread.completed',
        'runtime.run.completed',
      ])
      const finished = events.filter((e) => e.type === 'workflow.node.finished')
      expect(finished.map((e) => e.payload)).toEqual([
        { nodeId: 'a', result: 2 },
        { nodeId: 'b', result: 4 },
      ])
    })

    test('a custom kind runs a two-effect chain to completion', async (w) => {
      const engine = await w.boot()
      const { runId, state } = await engine.start(CHAIN)
      expect(state.status).toBe('completed')
      expect(state.output).toEqual({ doubled: 8 })
      const events = await engine.getEvents(runId)
      expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i + 1))
      expect(events.map((e) => e.type)).toEqual([
        'runtime.run.started',
        'runtime.thread.started',
        'runtime.effect.requested',
        'runtime.effect.attempt.started',
        'runtime.effect.completed',
        'runtime.effect.requested',
        'runtime.effect.attempt.started',
        'runtime.effect.completed',
        'runtime.thread.completed',
        'runtime.run.completed',
      ])
    })

    test('parks on a gate, then approval runs the effect and completes', async (w) => {
      const engine = await w.boot()
      const { runId, state } = await engine.start(release, { topic: 'Skein' })
      expect(state.status).toBe('running')
      const pending = await engine.project(runId, pendingApprovals)
      expect(pending.items).toHaveLength(1)
      expect(pending.items[0]).toMatchObject({ title: 'Publish?', status: 'pending' })
      const after = await engine.signal(runId, [decision(pending.items[0].approvalId, 'approve')])
      expect(after.status).toBe('completed')
      expect(after.output).toEqual({ published: true })
      expect(w.control.published).toEqual(['About Skein'])
      expect((await engine.project(runId, 'pendingApprovals')).items[0].status).toBe('approved')
      expect(await w.types(runId)).toEqual([
        'runtime.run.started',
        'runtime.thread.started',
        'workflow.node.started',
        'workflow.node.finished',
        'workflow.node.started',
        'approval.requested',
        'runtime.wait.registered',
        'approval.decided',
        'runtime.wait.satisfied',
        'workflow.node.finished',
        'workflow.node.started',
        'runtime.effect.requested',
        'runtime.effect.attempt.started',
        'runtime.effect.completed',
        'workflow.node.finished',
        'runtime.thread.completed',
        'runtime.run.completed',
      ])
    })

    test('a rejection skips the publish node by `when`', async (w) => {
      const engine = await w.boot()
      const { runId } = await engine.start(release, { topic: 'x' })
      const [item] = (await engine.project(runId, pendingApprovals)).items
      const state = await engine.signal(runId, [decision(item.approvalId, 'reject')])
      expect(state.output).toEqual({ published: false })
      const skipped = (await engine.getEvents(runId)).filter(
        (e) => e.type === 'workflow.node.skipped',
      )
      expect(skipped.map((e) => (e.payload as { nodeId: string }).nodeId)).toEqual(['publish'])
      expect(w.control.published).toEqual([])
    })

    test('sleep parks on a timer that fires when the clock moves', async (w) => {
      const engine = await w.boot()
      const { runId, state } = await engine.start(nap)
      expect(state.status).toBe('running')
      expect(state.threads[state.rootThreadId].status).toBe('waiting')
      await w.clock.advance(59_999)
      expect((await engine.getRun(runId)).status).toBe('running')
      await w.clock.advance(1)
      const done = await engine.getRun(runId)
      expect(done.status).toBe('completed')
      expect((done.output as { after: string }).after).toBe('awake')
      expect(await w.types(runId)).toEqual([
        'runtime.run.started',
        'runtime.thread.started',
        'workflow.node.started',
        'runtime.wait.registered',
        'runtime.timer.set',
        'runtime.timer.fired',
        'runtime.wait.satisfied',
        'workflow.node.finished',
        'workflow.node.started',
        'workflow.node.finished',
        'runtime.thread.completed',
        'runtime.run.completed',
      ])
    })

    test('retries a failing effect with backoff under the manual clock', async (w) => {
      const engine = await w.boot()
      const { runId, state } = await engine.start(flaky)
      expect(state.status).toBe('running')
      await w.clock.advance(100)
      await w.idle()
      await w.clock.advance(200)
      await w.idle()
      const done = await engine.getRun(runId)
      expect(done.status).toBe('completed')
      expect(w.control.flakyCalls).toBe(3)
      const events = await engine.getEvents(runId)
      const retries = events.filter((e) => e.type === 'runtime.effect.retry.scheduled')
      expect(
        retries.map((e) => (e.payload as { nextAttemptAt: number }).nextAttemptAt - e.ts),
      ).toEqual([100, 200])
    })

    test('a terminal error fails the node and the run; onFailure skip and fallback recover', async (w) => {
      const engine = await w.boot()
      const failed = await engine.start(failing)
      expect(failed.state.status).toBe('failed')
      expect(failed.state.error?.code).toBe('NODE_FAILED')
      expect(failed.state.error?.message).toContain('card declined')
      const skipped = await engine.start(skipping)
      expect(skipped.state.status).toBe('completed')
      expect((skipped.state.output as { b: string }).b).toBe('b ran')
      const fell = await engine.start(falling)
      expect(fell.state.status).toBe('completed')
      expect((fell.state.output as { c: string }).c).toBe('c saw fallback result')
    })

    test('spawns a child workflow and uses its output', async (w) => {
      const engine = await w.boot()
      const { state } = await engine.start(parent)
      expect(state.status).toBe('completed')
      expect(state.output).toBe(40)
      expect(Object.keys(state.threads)).toHaveLength(2)
      const [root, spawned] = Object.values(state.threads)
      expect(spawned).toMatchObject({
        parentThreadId: root.threadId,
        definitionName: child.name,
        status: 'completed',
      })
    })

    test('waitFor resumes on a matching signal and times out otherwise', async (w) => {
      const engine = await w.boot()
      const a = await engine.start(waiter)
      await engine.signal(a.runId, [{ type: 'shop.paid', payload: { orderId: 'o2' } }])
      expect((await engine.getRun(a.runId)).status).toBe('running')
      const paid = await engine.signal(a.runId, [
        { type: 'shop.paid', payload: { orderId: 'o1', amount: 5 } },
      ])
      expect(paid.status).toBe('completed')
      expect((paid.output as { w: unknown }).w).toEqual({ orderId: 'o1', amount: 5 })
      const b = await engine.start(waiter)
      await w.clock.advance(5000)
      const timedOut = await engine.getRun(b.runId)
      expect(timedOut.status).toBe('failed')
      expect(timedOut.error?.message).toContain('timed out')
    })
  })
}
