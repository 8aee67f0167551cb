import { describe, expect } from 'vitest'
import { decision, pendingApprovals } from '../../modules/approval/index.js'
import type { ContractCase } from './case.js'
import { calling, nap, release } from './definitions.js'
import { eventually } from './eventually.js'

/** A new engine on the same store carries on where the stopped one left off. */
export function restartCases(test: ContractCase): void {
  describe('restart recovery', () => {
    test('on boot, timers that fell due while down fire at once (rescanTimers)', async (w) => {
      const first = await w.boot()
      const { runId } = await first.start(nap)
      await first.stop()
      await w.clock.advance(60_000) // the process is down; nothing fires
      expect((await w.store.read(runId)).at(-1)?.type).not.toBe('runtime.run.completed')
      const second = await w.restart()
      await w.clock.advance(0)
      await w.idle()
      expect((await second.getRun(runId)).status).toBe('completed')
    })

    test('an attempt started but not recorded when the process died is re-attempted as n+1, and the log says so', async (w) => {
      w.control.callHangs = true
      const first = await w.boot()
      void first.start(calling, undefined, { runId: 'crash' }).catch(() => {})
      await w.until('crash', (e) => e.type === 'runtime.effect.attempt.started')
      // The attempt is logged before its handler runs: wait for the call itself, so the first
      // engine "dies" with the call in flight, not before making it.
      await eventually(() => w.control.calls === 1, 'the first attempt to call')
      w.control.callHangs = false
      const second = await w.restart() // the first "dies" with attempt 1 in flight
      await w.clock.advance(0)
      await w.idle()
      const state = await second.getRun('crash')
      expect(state.status).toBe('completed')
      expect(w.control.calls).toBe(2)
      const events = await second.getEvents('crash')
      const failed = events.find((e) => e.type === 'runtime.effect.failed')!
      expect(failed.payload).toMatchObject({ attempt: 1, reason: 'interrupted', final: false })
      const starts = events.filter((e) => e.type === 'runtime.effect.attempt.started')
      expect(starts.map((e) => (e.payload as { attempt: number }).attempt)).toEqual([1, 2])
    })

    test('recoverDeadlines rebuilds deadlines by folding every run', async (w) => {
      const first = await w.boot()
      await first.start(nap)
      await first.start(nap)
      const second = await w.restart({ rescanTimers: false })
      expect(await second.recoverDeadlines()).toBe(2)
      await w.clock.advance(60_000)
      await w.idle()
      const { runs } = await second.listRunSummaries()
      expect(runs.map((r) => r.status)).toEqual(['completed', 'completed'])
    })

    test('a run parked on a gate is approved through a new engine and completes there', async (w) => {
      const first = await w.boot()
      const { runId } = await first.start(release, { topic: 'restart' })
      const before = await first.getRun(runId)
      const second = await w.restart()
      expect(await second.getRun(runId)).toEqual(before)
      const [item] = (await second.project(runId, pendingApprovals)).items
      expect(item).toMatchObject({ title: 'Publish?', status: 'pending' })
      const done = await second.signal(runId, [decision(item.approvalId, 'approve')])
      expect(done).toMatchObject({ status: 'completed', output: { published: true } })
      expect(w.control.published).toEqual(['About restart'])
      const events = await second.getEvents(runId)
      expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i + 1))
    })
  })
}
