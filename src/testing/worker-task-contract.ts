import { describe, expect, it } from 'vitest'
import type { WorkerTask, WorkerTaskStore } from '../core/ports.js'

/** A store's worker tasks, opened twice on one storage (two processes). */
export interface WorkerTaskStorePair {
  a: WorkerTaskStore
  b: WorkerTaskStore
}

const task = (effectId: string, type = 'mail.send', runId = 'r1'): WorkerTask => ({
  runId,
  effectId,
  attempt: 1,
  type,
  input: { n: effectId },
  threadId: 't1',
  deadlineAt: null,
})

const ids = (tasks: ReadonlyArray<{ task: WorkerTask }>) => tasks.map((t) => t.task.effectId)
const claim = (store: WorkerTaskStore, owner: string, now: number, max = 10, types?: string[]) =>
  store.claim({ types: types ?? null, max, owner, now, expiresAt: now + 1_000 })

/**
 * The worker task store contract (`WorkerTaskStore` in core/ports.ts, docs/workers.md "Durable
 * tasks"), for every store that has one. `open` gives two handles on one fresh storage, as two
 * processes have.
 */
export function describeWorkerTaskStore(
  name: string,
  open: () => WorkerTaskStorePair | Promise<WorkerTaskStorePair>,
): void {
  describe(`${name}: worker task store contract`, () => {
    it('keeps a task once per key, in queue order, readable from the other handle', async () => {
      const { a, b } = await open()
      await a.enqueue([task('e1'), task('e2', 'mail.other')], 10)
      await b.enqueue([task('e1'), task('e3')], 20)
      const stored = await b.list()
      expect(ids(stored)).toEqual(['e1', 'e2', 'e3'])
      expect(stored[0]).toEqual({
        task: task('e1'),
        owner: null,
        epoch: 0,
        claimExpiresAt: 0,
        createdAt: 10,
      })
      await a.enqueue([task('x', 'mail.send', 'r2')], 30)
      expect(ids(await a.list('r2'))).toEqual(['x'])
    })

    it('claims free tasks oldest first, by type and up to max; a live claim is never handed out again', async () => {
      const { a, b } = await open()
      await a.enqueue([task('e1'), task('e2', 'other'), task('e3'), task('e4')], 1)
      const first = await claim(a, 'A', 100, 2, ['mail.send'])
      expect(ids(first)).toEqual(['e1', 'e3'])
      expect(first[0]).toMatchObject({ owner: 'A', epoch: 1, claimExpiresAt: 1_100 })
      expect(ids(await claim(b, 'B', 200))).toEqual(['e2', 'e4'])
      expect(await claim(b, 'B', 1_099)).toEqual([])
      // A lapsed claim frees the task: the next claim bumps its epoch.
      const again = await claim(b, 'B', 1_100, 1)
      expect(again.map((t) => [t.task.effectId, t.owner, t.epoch])).toEqual([['e1', 'B', 2]])
    })

    it('take removes a task only under its current claim: one of two claimers wins', async () => {
      const { a, b } = await open()
      await a.enqueue([task('e1'), task('e2')], 1)
      const [byA] = await claim(a, 'A', 100, 1)
      const [byB] = await claim(b, 'B', 1_100, 1) // A's claim lapsed at 1_100
      expect(byB.task.effectId).toBe('e1')
      const key = { runId: 'r1', effectId: 'e1', attempt: 1 }
      expect(await a.take([{ ...key, epoch: byA.epoch }])).toEqual([])
      expect(await b.take([{ ...key, epoch: byB.epoch }])).toEqual([key])
      expect(await b.take([{ ...key, epoch: byB.epoch }])).toEqual([])
      expect(ids(await a.list())).toEqual(['e2'])
    })

    it('concurrent claims on both handles never hand one task to both', async () => {
      const { a, b } = await open()
      const many = Array.from({ length: 60 }, (_, i) => task(`e${i}`))
      await a.enqueue(many, 1)
      const rounds = await Promise.all(
        Array.from({ length: 12 }, (_, i) => claim(i % 2 ? a : b, i % 2 ? 'A' : 'B', 100, 7)),
      )
      const claimed = rounds.flatMap(ids)
      expect(new Set(claimed).size).toBe(claimed.length)
      expect(claimed.length).toBe(60)
    })

    it('watch hears tasks stored through either handle until unwatched', async () => {
      const { a, b } = await open()
      let heard = 0
      let resolveHeard: () => void = () => {}
      const next = () =>
        new Promise<void>((resolve) => {
          resolveHeard = resolve
        })
      const unwatch = a.watch(() => {
        heard++
        resolveHeard()
      })
      let hint = next()
      await b.enqueue([task('other-handle')], 1)
      await hint
      hint = next()
      await a.enqueue([task('own-handle')], 2)
      await hint
      unwatch()
      const before = heard
      await b.enqueue([task('after')], 3)
      await a.enqueue([task('after-2')], 4)
      await a.list()
      expect(heard).toBe(before)
    })

    it('remove: any task, or only one nobody holds', async () => {
      const { a, b } = await open()
      await a.enqueue([task('e1'), task('e2'), task('e3')], 1)
      await claim(a, 'A', 100, 1)
      const key = (effectId: string) => ({ runId: 'r1', effectId, attempt: 1 })
      expect(await b.remove(key('e1'), { unclaimedAt: 500 })).toBe(false)
      expect(await b.remove(key('e1'), { unclaimedAt: 1_100 })).toBe(true)
      expect(await b.remove(key('e2'), { unclaimedAt: 500 })).toBe(true)
      expect(await b.remove(key('e3'))).toBe(true)
      expect(await b.remove(key('e3'))).toBe(false)
      expect(await a.list()).toEqual([])
    })
  })
}
