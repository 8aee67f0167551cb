import { describe, expect, it } from 'vitest'
import type { ScheduleRecord, ScheduleStore, WaitUrlStore } from '../core/ports.js'

/** A store's schedule and wait URL tables, opened twice on one storage (two processes). */
export interface ScheduleStorePair {
  a: { schedules: ScheduleStore; waitUrls: WaitUrlStore }
  b: { schedules: ScheduleStore; waitUrls: WaitUrlStore }
}

const record = (name: string, wakeAt: number | null, paused = false): ScheduleRecord => ({
  name,
  spec: { name, every: 60_000 },
  paused,
  wakeAt,
  state: { nextTick: wakeAt, recent: [] },
  version: 1,
  createdAt: 1,
  updatedAt: 1,
})

/**
 * The schedule store contract (`ScheduleStore`, `WaitUrlStore` in core/ports.ts), for every
 * store that has them. `open` gives two handles on one fresh storage, as two processes have.
 */
export function describeScheduleStore(
  name: string,
  open: () => ScheduleStorePair | Promise<ScheduleStorePair>,
): void {
  describe(`${name}: schedule store contract`, () => {
    it('inserts once per name, reads back the same record, lists by name', async () => {
      const { a, b } = await open()
      expect(await a.schedules.insert(record('b', 10))).toBe(true)
      expect(await a.schedules.insert(record('a', 20))).toBe(true)
      expect(await b.schedules.insert(record('a', 5))).toBe(false)
      expect(await b.schedules.get('a')).toEqual(record('a', 20))
      expect((await b.schedules.list()).map((r) => r.name)).toEqual(['a', 'b'])
      expect(await b.schedules.get('nope')).toBeNull()
    })

    it('updates by compare-and-set on the version: one of two racing writers wins', async () => {
      const { a, b } = await open()
      await a.schedules.insert(record('s', 10))
      const next = { ...record('s', 30), version: 2 }
      const results = await Promise.all([
        a.schedules.update(next, 1),
        b.schedules.update({ ...next, wakeAt: 40 }, 1),
      ])
      expect(results.filter(Boolean)).toHaveLength(1)
      expect((await a.schedules.get('s'))?.version).toBe(2)
      expect(await a.schedules.update({ ...next, version: 3 }, 1)).toBe(false)
      expect(await a.schedules.update(record('missing', 1), 0)).toBe(false)
    })

    it('updates many in one call, each by its own compare-and-set, in order', async () => {
      const { a, b } = await open()
      await a.schedules.insert(record('x', 10))
      await a.schedules.insert(record('y', 10))
      await b.schedules.update({ ...record('y', 20), version: 2 }, 1)
      const written = await a.schedules.updateMany([
        { record: { ...record('x', 50), version: 2, state: { n: 'ü' } }, expectedVersion: 1 },
        { record: { ...record('y', 50), version: 2 }, expectedVersion: 1 },
        { record: { ...record('gone', 50), version: 2 }, expectedVersion: 1 },
      ])
      expect(written).toEqual([true, false, false])
      expect(await b.schedules.get('x')).toEqual({
        ...record('x', 50),
        version: 2,
        state: { n: 'ü' },
      })
      expect((await b.schedules.get('y'))?.wakeAt).toBe(20)
      expect(await a.schedules.updateMany([])).toEqual([])
    })

    it('finds due schedules earliest first, skipping paused ones; the next wake; delete', async () => {
      const { a, b } = await open()
      await a.schedules.insert(record('late', 300))
      await a.schedules.insert(record('early', 100))
      await a.schedules.insert(record('paused', 50, true))
      await a.schedules.insert(record('never', null))
      expect((await b.schedules.due(300, 10)).map((r) => r.name)).toEqual(['early', 'late'])
      expect((await b.schedules.due(300, 1)).map((r) => r.name)).toEqual(['early'])
      expect(await b.schedules.due(99, 10)).toEqual([])
      expect(await b.schedules.nextWakeAt()).toBe(100)
      expect(await b.schedules.delete('early')).toBe(true)
      expect(await b.schedules.delete('early')).toBe(false)
      expect(await a.schedules.nextWakeAt()).toBe(300)
    })

    it('keeps the ticker mark for every handle', async () => {
      const { a, b } = await open()
      expect(await a.schedules.readMark()).toBeNull()
      await a.schedules.writeMark(1000)
      expect(await b.schedules.readMark()).toBe(1000)
    })

    it('keeps wait URL tokens by hash; one use wins', async () => {
      const { a, b } = await open()
      const token = {
        hash: 'h1',
        tokenId: 'wt_1',
        runId: 'r',
        threadId: 't',
        waitKey: 'w',
        expiresAt: 500,
        options: { input: null },
        usedAt: null,
        createdAt: 1,
      }
      await a.waitUrls.insert(token)
      expect(await b.waitUrls.find('h1')).toEqual(token)
      expect(await b.waitUrls.find('h2')).toBeNull()
      const uses = await Promise.all([a.waitUrls.use('h1', 7), b.waitUrls.use('h1', 8)])
      expect(uses.filter(Boolean)).toHaveLength(1)
      expect((await a.waitUrls.find('h1'))?.usedAt).toBeOneOf([7, 8])
    })
  })
}
