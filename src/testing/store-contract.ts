import { afterEach, describe, expect, it } from 'vitest'
import type { EventEnvelope } from '../core/envelope.js'
import { IdempotencyConflictError, InvalidRequestError, SeqConflictError } from '../core/errors.js'
import type { Json } from '../core/json.js'
import type { EventStore, RunMeta, Snapshot, SnapshotStore } from '../core/ports.js'
import { storeCapabilities } from '../core/store-capabilities.js'
import { summaryAttributesContract } from './attribute-contract.js'
import { makeEnvelopes } from './make-envelopes.js'
import { openedPerTest } from './opened-per-test.js'
import { rejection } from './rejection.js'
import { summaryPagingContract } from './summary-contract.js'

export interface StoreContractOptions {
  /** Called after each test with the store it made (after `close()`), e.g. to delete files. */
  cleanup?: (store: EventStore) => unknown
  /** Size of the large-payload round trip; default ≈900 KiB. */
  largePayloadBytes?: number
  /** Contract tests skipped because of a known, reported bug in the store under test. */
  knownFailures?: readonly ContractTest[]
}

/** Names of contract tests that `knownFailures` can skip. */
export type ContractTest = 'throwing-listener'

export interface SnapshotContractOptions {
  /** Called after each test with the snapshot store it made. */
  cleanup?: (store: SnapshotStore) => unknown
}

const meta = (over: Partial<RunMeta> = {}): RunMeta => ({
  status: 'running',
  kind: 'workflow',
  definitionName: 'demo',
  definitionVersion: '1',
  createdAt: 1000,
  updatedAt: 1000,
  nextDeadlineAt: null,
  ...over,
})

/**
 * The one contract every EventStore implementation runs (docs/testing.md). Call it at the top level
 * of a vitest file; `makeStore` must return a fresh, empty store each time.
 *
 * @example
 * describeEventStore('memory', () => memoryStore())
 */
export function describeEventStore(
  name: string,
  makeStore: () => EventStore | Promise<EventStore>,
  options: StoreContractOptions = {},
): void {
  describe(`EventStore contract: ${name}`, () => {
    const open = openedPerTest(makeStore, async (store) => {
      await store.close?.()
      await options.cleanup?.(store)
    })

    summaryPagingContract(open)
    summaryAttributesContract(open)

    it('declares its capabilities truthfully: each one exactly when it has the member', async () => {
      const store = await open()
      expect(() => storeCapabilities(store, name)).not.toThrow()
    })

    it('reports an unknown run as empty', async () => {
      const store = await open()
      expect(await store.read('nope')).toEqual([])
      expect(await store.tail('nope')).toBe(0)
      expect(await store.bounds('nope')).toEqual({ head: 0, tail: 0 })
      expect(await store.listRuns()).toEqual([])
    })

    it('appends batches and reads them back in order', async () => {
      const store = await open()
      const first = makeEnvelopes('r1', 1, 3)
      const second = makeEnvelopes('r1', 4, 2)
      await store.append('r1', first, { expectedSeq: 0 })
      await store.append('r1', second, { expectedSeq: 3 })
      expect(await store.read('r1')).toStrictEqual([...first, ...second])
      expect(await store.tail('r1')).toBe(5)
      expect(await store.bounds('r1')).toEqual({ head: 1, tail: 5 })
    })

    it('treats a deferred append like any other (fenced, read back), and flush resolves', async () => {
      const store = await open()
      const first = makeEnvelopes('r1', 1, 2)
      await store.append('r1', first, { expectedSeq: 0, durability: 'deferred' })
      const conflict = await rejection(
        store.append('r1', makeEnvelopes('r1', 1, 1), { expectedSeq: 0, durability: 'deferred' }),
      )
      expect(SeqConflictError.is(conflict)).toBe(true)
      const second = makeEnvelopes('r1', 3, 1)
      await store.append('r1', second, { expectedSeq: 2 })
      expect(await store.read('r1')).toStrictEqual([...first, ...second])
      await store.flush?.()
    })

    it('reads from a seq with a limit', async () => {
      const store = await open()
      const events = makeEnvelopes('r1', 1, 10)
      await store.append('r1', events, { expectedSeq: 0 })
      expect(await store.read('r1', { fromSeq: 4 })).toStrictEqual(events.slice(3))
      expect(await store.read('r1', { fromSeq: 4, limit: 3 })).toStrictEqual(events.slice(3, 6))
      expect(await store.read('r1', { limit: 2 })).toStrictEqual(events.slice(0, 2))
      expect(await store.read('r1', { fromSeq: 11 })).toEqual([])
      expect(await store.read('r1', { fromSeq: 9, limit: 10 })).toStrictEqual(events.slice(8))
      expect(await store.read('r1', { limit: 0 })).toEqual([])
    })

    it('keeps optional envelope fields exactly (present or absent)', async () => {
      const store = await open()
      const [a, b] = makeEnvelopes('r1', 1, 2)
      const full: EventEnvelope = {
        ...a,
        threadId: 't-1',
        causationId: 'cause-1',
        effectId: 'fx-1',
        origin: 'worker',
        idempotencyKey: 'idem-1',
        key: 'emit-1',
      }
      const bare: EventEnvelope = { ...b, origin: 'operator' }
      await store.append('r1', [full, bare], { expectedSeq: 0 })
      expect(await store.read('r1')).toStrictEqual([full, bare])
    })

    it('rejects a first append whose expectedSeq is not 0 and writes nothing', async () => {
      const store = await open()
      const error = await rejection(
        store.append('r1', makeEnvelopes('r1', 2, 1), { expectedSeq: 1 }),
      )
      expect(SeqConflictError.is(error)).toBe(true)
      expect(await store.tail('r1')).toBe(0)
      expect(await store.listRuns()).toEqual([])
    })

    it('rejects a stale or future expectedSeq and writes nothing', async () => {
      const store = await open()
      await store.append('r1', makeEnvelopes('r1', 1, 2), { expectedSeq: 0 })
      const stale = await rejection(
        store.append('r1', makeEnvelopes('r1', 2, 1), { expectedSeq: 1, meta: meta() }),
      )
      expect(SeqConflictError.is(stale)).toBe(true)
      const future = await rejection(
        store.append('r1', makeEnvelopes('r1', 4, 1), { expectedSeq: 3 }),
      )
      expect(SeqConflictError.is(future)).toBe(true)
      expect((await store.read('r1')).map((e) => e.seq)).toEqual([1, 2])
      if (store.listSummaries) expect((await store.listSummaries({ limit: 10 })).runs).toEqual([])
    })

    it('lets exactly one of two racing appends at the same expectedSeq win', async () => {
      const store = await open()
      const a = makeEnvelopes('r1', 1, 2, () => 'a')
      const b = makeEnvelopes('r1', 1, 3, () => 'b')
      const results = await Promise.allSettled([
        store.append('r1', a, { expectedSeq: 0 }),
        store.append('r1', b, { expectedSeq: 0 }),
      ])
      const won = results.filter((r) => r.status === 'fulfilled')
      const lost = results.filter((r) => r.status === 'rejected')
      expect(won).toHaveLength(1)
      expect(SeqConflictError.is((lost[0] as PromiseRejectedResult).reason)).toBe(true)
      const winner = results[0].status === 'fulfilled' ? a : b
      expect(await store.read('r1')).toStrictEqual(winner)
    })

    it('keeps idempotency keys unique per run and writes nothing on a conflict', async () => {
      const store = await open()
      await store.append('r1', makeEnvelopes('r1', 1, 1), { expectedSeq: 0, idempotencyKey: 'k' })
      const error = await rejection(
        store.append('r1', makeEnvelopes('r1', 2, 2), {
          expectedSeq: 1,
          idempotencyKey: 'k',
          meta: meta(),
        }),
      )
      expect(IdempotencyConflictError.is(error)).toBe(true)
      expect(await store.tail('r1')).toBe(1)
      expect(await store.read('r1')).toHaveLength(1)
      if (store.listSummaries) expect((await store.listSummaries({ limit: 10 })).runs).toEqual([])
      // Another key on the same run and the same key on another run are both fine.
      await store.append('r1', makeEnvelopes('r1', 2, 1), { expectedSeq: 1, idempotencyKey: 'k2' })
      await store.append('r2', makeEnvelopes('r2', 1, 1), { expectedSeq: 0, idempotencyKey: 'k' })
      expect(await store.tail('r1')).toBe(2)
      expect(await store.tail('r2')).toBe(1)
    })

    it("lists a run's recorded keys and restores the ones it lacks (idempotencyKeys)", async (ctx) => {
      const store = await open()
      const keys = store.idempotencyKeys
      if (!keys) return ctx.skip()
      await store.append('r1', makeEnvelopes('r1', 1, 2), { expectedSeq: 0, idempotencyKey: 'b' })
      await store.append('r1', makeEnvelopes('r1', 3, 1), { expectedSeq: 2, idempotencyKey: 'a' })
      expect(await keys.list('r1')).toEqual([
        { key: 'b', seq: 2 },
        { key: 'a', seq: 3 },
      ])
      expect(await keys.list('nope')).toEqual([])
      // A run not held gets nothing; a held one gets the keys it lacks, the others stay.
      await keys.restore('nope', [{ key: 'x', seq: 1 }])
      expect(await keys.list('nope')).toEqual([])
      await keys.restore('r1', [
        { key: 'b', seq: 1 },
        { key: 'c', seq: 1 },
      ])
      expect(await keys.list('r1')).toEqual([
        { key: 'c', seq: 1 },
        { key: 'b', seq: 2 },
        { key: 'a', seq: 3 },
      ])
      const error = await rejection(
        store.append('r1', makeEnvelopes('r1', 4, 1), { expectedSeq: 3, idempotencyKey: 'c' }),
      )
      expect(IdempotencyConflictError.is(error)).toBe(true)
    })

    it('rejects a batch whose seqs or runIds do not continue the log, atomically', async () => {
      const store = await open()
      await store.append('r1', makeEnvelopes('r1', 1, 2), { expectedSeq: 0 })
      const gap = [...makeEnvelopes('r1', 3, 40), ...makeEnvelopes('r1', 44, 1)]
      const duplicate = [...makeEnvelopes('r1', 3, 2), ...makeEnvelopes('r1', 4, 1)]
      const wrongStart = makeEnvelopes('r1', 4, 2)
      const otherRun = [...makeEnvelopes('r1', 3, 1), ...makeEnvelopes('r2', 4, 1)]
      for (const batch of [gap, duplicate, wrongStart, otherRun]) {
        const error = await rejection(store.append('r1', batch, { expectedSeq: 2 }))
        expect(InvalidRequestError.is(error)).toBe(true)
      }
      expect((await store.read('r1')).map((e) => e.seq)).toEqual([1, 2])
      expect(await store.listRuns()).toEqual(['r1'])
    })

    it('round-trips nested, unicode and large payloads', async () => {
      const store = await open()
      const nested: Json = {
        a: [1, -2.5, 1e300, 0, true, false, null, '', [], {}],
        b: { c: { d: { e: [{ f: 'deep' }] } } },
        'key with spaces/and "quotes"': 'ok',
        unicode: 'héllo wörld — 日本語 — 🧵🪡 — \u0000 nul — \u2028 sep',
        '🔑': 'emoji key',
      }
      const bytes = options.largePayloadBytes ?? 900 * 1024
      const large: Json = {
        text: 'x'.repeat(bytes - 1024),
        list: Array.from({ length: 50 }, (_, i) => ({ i, s: 'ü'.repeat(5) })),
      }
      const events = [
        ...makeEnvelopes('r1', 1, 1, () => nested),
        ...makeEnvelopes('r1', 2, 1, () => large),
        ...makeEnvelopes('r1', 3, 1, () => 'just a string'),
        ...makeEnvelopes('r1', 4, 1, () => null),
        ...makeEnvelopes('r1', 5, 1, () => 42),
      ]
      await store.append('r1', events, { expectedSeq: 0 })
      expect(await store.read('r1')).toStrictEqual(events)
    })

    it('trims old events, moving the head but never the tail', async (ctx) => {
      const store = await open()
      if (!store.trim) return ctx.skip()
      const events = makeEnvelopes('r1', 1, 10)
      await store.append('r1', events, { expectedSeq: 0, idempotencyKey: 'first' })
      await store.append('r2', makeEnvelopes('r2', 1, 5), { expectedSeq: 0 })
      expect(await store.trim('r1', 4)).toBe(3)
      expect(await store.bounds('r2')).toEqual({ head: 1, tail: 5 })
      expect(await store.bounds('r1')).toEqual({ head: 4, tail: 10 })
      expect(await store.read('r1')).toStrictEqual(events.slice(3))
      expect(await store.read('r1', { fromSeq: 2, limit: 2 })).toStrictEqual(events.slice(3, 5))
      expect(await store.trim('r1', 3)).toBe(0)
      expect(await store.trim('nope', 5)).toBe(0)
      await store.append('r1', makeEnvelopes('r1', 11, 1), { expectedSeq: 10 })
      expect(await store.trim('r1', 100)).toBe(8)
      // Everything trimmed: the tail stays, the head points past it, appends continue.
      expect(await store.bounds('r1')).toEqual({ head: 12, tail: 11 })
      expect(await store.read('r1')).toEqual([])
      expect((await store.listRuns()).sort()).toEqual(['r1', 'r2'])
      // Trimming keeps batch idempotency keys: a retried first batch stays rejected.
      const retry = await rejection(
        store.append('r1', makeEnvelopes('r1', 12, 1), {
          expectedSeq: 11,
          idempotencyKey: 'first',
        }),
      )
      expect(IdempotencyConflictError.is(retry)).toBe(true)
      await store.append('r1', makeEnvelopes('r1', 12, 1), { expectedSeq: 11 })
      expect(await store.bounds('r1')).toEqual({ head: 12, tail: 12 })
    })

    it('lists only runs with at least one event', async () => {
      const store = await open()
      await store.append('b', makeEnvelopes('b', 1, 1), { expectedSeq: 0 })
      await store.append('a', makeEnvelopes('a', 1, 2), { expectedSeq: 0 })
      await store.append('empty', [], { expectedSeq: 0 })
      if (store.listSummaries) await store.append('meta-only', [], { expectedSeq: 0, meta: meta() })
      const unsubscribe = store.subscribe?.('watched', () => {})
      unsubscribe?.()
      expect((await store.listRuns()).sort()).toEqual(['a', 'b'])
    })

    it('upserts run meta with the append and lists summaries and deadlines', async (ctx) => {
      const store = await open()
      if (!store.listSummaries || !store.listRunsWithDeadlines) return ctx.skip()
      await store.append('r1', makeEnvelopes('r1', 1, 1), { expectedSeq: 0, meta: meta() })
      await store.append('r2', makeEnvelopes('r2', 1, 1), {
        expectedSeq: 0,
        meta: meta({ kind: 'agent', nextDeadlineAt: 5000 }),
      })
      await store.append('r3', makeEnvelopes('r3', 1, 1), { expectedSeq: 0 })
      const byId = async () =>
        Object.fromEntries(
          (await store.listSummaries!({ limit: 10 })).runs.map((s) => [s.runId, s]),
        )
      expect(await byId()).toEqual({
        r1: { runId: 'r1', ...meta() },
        r2: { runId: 'r2', ...meta({ kind: 'agent', nextDeadlineAt: 5000 }) },
      })
      expect(await store.listRunsWithDeadlines()).toEqual([{ runId: 'r2', nextDeadlineAt: 5000 }])

      // A later append without meta keeps it; with meta replaces it.
      await store.append('r1', makeEnvelopes('r1', 2, 1), { expectedSeq: 1 })
      expect((await byId()).r1).toEqual({ runId: 'r1', ...meta() })
      const done = meta({ status: 'completed', updatedAt: 2000, nextDeadlineAt: 0 })
      await store.append('r1', makeEnvelopes('r1', 3, 1), { expectedSeq: 2, meta: done })
      await store.append('r2', makeEnvelopes('r2', 2, 1), { expectedSeq: 1, meta: meta() })
      expect((await byId()).r1).toEqual({ runId: 'r1', ...done })
      expect(await store.listRunsWithDeadlines()).toEqual([{ runId: 'r1', nextDeadlineAt: 0 }])
    })

    it('feeds subscribers exactly the committed batches, in order, until unsubscribed', async (ctx) => {
      const store = await open()
      if (!store.subscribe) return ctx.skip()
      const seen: EventEnvelope[][] = []
      const unsubscribe = store.subscribe('r1', (events) => seen.push([...events]))
      const first = makeEnvelopes('r1', 1, 2)
      await store.append('r1', first, { expectedSeq: 0 })
      expect(seen).toStrictEqual([first])
      await rejection(store.append('r1', makeEnvelopes('r1', 1, 1), { expectedSeq: 0 }))
      await store.append('r2', makeEnvelopes('r2', 1, 1), { expectedSeq: 0 })
      await store.append('r1', [], { expectedSeq: 2 })
      const second = makeEnvelopes('r1', 3, 1)
      const third = makeEnvelopes('r1', 4, 3)
      await store.append('r1', second, { expectedSeq: 2 })
      await store.append('r1', third, { expectedSeq: 3 })
      expect(seen).toStrictEqual([first, second, third])
      unsubscribe()
      await store.append('r1', makeEnvelopes('r1', 7, 1), { expectedSeq: 6 })
      expect(seen).toHaveLength(3)
    })

    it('isolates a throwing listener from the append and the other listeners', async (ctx) => {
      const store = await open()
      if (!store.subscribe || options.knownFailures?.includes('throwing-listener')) {
        return ctx.skip()
      }
      const seen: number[] = []
      store.subscribe('r1', () => {
        throw new Error('listener bug')
      })
      store.subscribe('r1', (events) => seen.push(events.length))
      // The append is durable once committed: a listener's bug must not report it as failed.
      await store.append('r1', makeEnvelopes('r1', 1, 2), { expectedSeq: 0 })
      expect(seen).toEqual([2])
    })

    it('appends to many runs concurrently without mixing them up', async () => {
      const store = await open()
      const runs = Array.from({ length: 20 }, (_, i) => `run-${i}`)
      await Promise.all(
        runs.map(async (runId, i) => {
          for (let batch = 0; batch < 5; batch++) {
            const from = batch * (1 + (i % 3)) + 1
            await store.append(runId, makeEnvelopes(runId, from, 1 + (i % 3)), {
              expectedSeq: from - 1,
            })
          }
        }),
      )
      expect((await store.listRuns()).sort()).toEqual([...runs].sort())
      for (const [i, runId] of runs.entries()) {
        const count = 5 * (1 + (i % 3))
        expect(await store.read(runId)).toStrictEqual(makeEnvelopes(runId, 1, count))
      }
    })

    describe('attached snapshot store', () => {
      defineSnapshotTests(async () => (await open()).snapshots)
    })
  })
}

/**
 * The SnapshotStore contract. `make` must return a fresh, empty snapshot store each time.
 *
 * @example
 * describeSnapshotStore('memory', () => memorySnapshotStore())
 */
export function describeSnapshotStore(
  name: string,
  make: () => SnapshotStore | Promise<SnapshotStore>,
  options: SnapshotContractOptions = {},
): void {
  describe(`SnapshotStore contract: ${name}`, () => {
    const opened: SnapshotStore[] = []
    afterEach(async () => {
      for (const store of opened.splice(0)) await options.cleanup?.(store)
    })
    defineSnapshotTests(async () => {
      const store = await make()
      opened.push(store)
      return store
    })
  })
}

const snap = (runId: string, seq: number, data: Json = { at: seq }): Snapshot => ({
  runId,
  seq,
  createdAt: 1000 + seq,
  format: 1,
  data,
})

function defineSnapshotTests(make: () => Promise<SnapshotStore | undefined>): void {
  it('is empty for an unknown run', async (ctx) => {
    const store = await make()
    if (!store) return ctx.skip()
    expect(await store.latest('nope')).toBeNull()
    expect(await store.list('nope')).toEqual([])
    expect(await store.prune('nope', 1)).toBe(0)
  })

  it('saves and returns the latest snapshot at or before a seq', async (ctx) => {
    const store = await make()
    if (!store) return ctx.skip()
    const data: Json = { nested: { list: [1, 'two', null, { three: true }] }, text: '日本 🧵' }
    for (const seq of [20, 5, 10]) await store.save(snap('r1', seq, { ...data, seq }))
    await store.save(snap('r2', 7))
    expect(await store.list('r1')).toEqual([5, 10, 20])
    expect(await store.latest('r1')).toStrictEqual(snap('r1', 20, { ...data, seq: 20 }))
    expect((await store.latest('r1', 19))?.seq).toBe(10)
    expect((await store.latest('r1', 10))?.seq).toBe(10)
    expect(await store.latest('r1', 4)).toBeNull()
    expect(await store.list('r2')).toEqual([7])
  })

  it('hands out snapshot data the caller may mutate', async (ctx) => {
    const store = await make()
    if (!store) return ctx.skip()
    await store.save(snap('r1', 3, { list: [1], inner: { a: 1 } }))
    const first = (await store.latest('r1'))!.data as { list: number[]; inner: { a: number } }
    first.list.push(2)
    first.inner.a = 99
    expect((await store.latest('r1'))!.data).toStrictEqual({ list: [1], inner: { a: 1 } })
  })

  it('replaces a snapshot saved again at the same seq', async (ctx) => {
    const store = await make()
    if (!store) return ctx.skip()
    await store.save(snap('r1', 5, 'old'))
    await store.save({ ...snap('r1', 5, 'new'), format: 2 })
    expect(await store.list('r1')).toEqual([5])
    expect(await store.latest('r1')).toStrictEqual({ ...snap('r1', 5, 'new'), format: 2 })
  })

  it('prunes all but the newest snapshots of one run', async (ctx) => {
    const store = await make()
    if (!store) return ctx.skip()
    for (const seq of [1, 2, 3, 4, 5]) await store.save(snap('r1', seq))
    await store.save(snap('r2', 1))
    expect(await store.prune('r1', 2)).toBe(3)
    expect(await store.list('r1')).toEqual([4, 5])
    expect(await store.prune('r1', 5)).toBe(0)
    expect(await store.prune('r1', 0)).toBe(2)
    expect(await store.list('r1')).toEqual([])
    expect(await store.list('r2')).toEqual([1])
  })
}
