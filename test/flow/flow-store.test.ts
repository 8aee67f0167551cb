import type { EventStore, FlowEntry, FlowStore, RunMeta } from 'skein'
import { makeEnvelopes } from 'skein/testing'
import { describe, expect, it } from 'vitest'
import { storeKinds } from '../support/store-kinds.js'

const kinds = storeKinds('flow-store')

const meta = (status: RunMeta['status']): RunMeta => ({
  status,
  kind: 'workflow',
  definitionName: 'q',
  definitionVersion: 'v1',
  createdAt: 1000,
  updatedAt: 1000,
  nextDeadlineAt: null,
})

const entry = (runId: string, over: Partial<FlowEntry> = {}): FlowEntry => ({
  runId,
  queue: 'workflow:q',
  key: 'k',
  priority: 0,
  startAt: 0,
  enqueuedAt: 1000,
  ...over,
})

/** Writes the run's log (one event) with a status, as the engine's start does. */
async function writeRun(store: EventStore, runId: string, status: RunMeta['status']) {
  const tail = await store.tail(runId)
  await store.append(runId, makeEnvelopes(runId, tail + 1, 1), {
    expectedSeq: tail,
    meta: meta(status),
  })
}

/** A start: queued (admitted at once when a slot is free), then its log written. */
async function start(store: EventStore, runId: string, limit: number, over = {}, now = 1000) {
  const flow = store.flow as FlowStore
  const request = { queue: 'workflow:q', key: 'k', limit, now, holdUntil: now + 100 }
  const { admitted } = await flow.admit({ ...request, enqueue: entry(runId, over) })
  await writeRun(store, runId, admitted.includes(runId) ? 'running' : 'queued')
  return admitted
}

const round = async (store: EventStore, limit: number, now = 1000, key = 'k') =>
  (
    await (store.flow as FlowStore).admit({
      queue: 'workflow:q',
      key,
      limit,
      now,
      holdUntil: now + 100,
    })
  ).admitted

const admitted = async (store: EventStore, runId: string) =>
  (await (store.flow as FlowStore).admission(runId)) !== null

describe.each(kinds)('FlowStore ($name)', (kind) => {
  it('admits up to the limit; the commit that ends a run frees its slot', async () => {
    const store = kind.fresh().open()
    expect(await start(store, 'r1', 2)).toEqual(['r1'])
    expect(await start(store, 'r2', 2)).toEqual(['r2'])
    expect(await start(store, 'r3', 2)).toEqual([])
    expect(await start(store, 'r4', 2)).toEqual([])
    expect(await round(store, 2)).toEqual([])
    expect(await admitted(store, 'r3')).toBe(false)
    await writeRun(store, 'r1', 'completed')
    expect(await round(store, 2)).toEqual(['r3'])
    expect(await admitted(store, 'r3')).toBe(true)
    expect(await round(store, 2)).toEqual([])
    expect(await store.flow?.keys(0)).toEqual([
      {
        queue: 'workflow:q',
        key: 'k',
        active: 2,
        queued: 1,
        recentAdmissions: 0,
        oldestQueuedAt: 1000,
      },
    ])
  })

  it('admits the highest priority first, then in queueing order; not before startAt', async () => {
    const store = kind.fresh().open()
    await start(store, 'busy', 1)
    await start(store, 'low', 1, { priority: -1 })
    await start(store, 'first', 1)
    await start(store, 'later', 1, { startAt: 5000, priority: 9 })
    await start(store, 'high', 1, { priority: 5 })
    const order: string[] = []
    let running = 'busy'
    for (let i = 0; i < 3; i++) {
      await writeRun(store, running, 'completed')
      const [next] = await round(store, 1)
      order.push(next)
      running = next
    }
    expect(order).toEqual(['high', 'first', 'low'])
    await writeRun(store, running, 'completed')
    expect(await round(store, 1, 4999)).toEqual([])
    expect(await round(store, 1, 5000)).toEqual(['later'])
  })

  it('never admits a cancelled queued run, and a cancelled one frees nothing', async () => {
    const store = kind.fresh().open()
    await start(store, 'a', 1)
    await start(store, 'b', 1)
    await start(store, 'c', 1)
    await writeRun(store, 'b', 'cancelled')
    expect(await round(store, 1)).toEqual([])
    await writeRun(store, 'a', 'completed')
    expect(await round(store, 1)).toEqual(['c'])
    expect(await admitted(store, 'b')).toBe(false)
  })

  it('a start admitted before its log holds the slot until its hold lapses', async () => {
    const store = kind.fresh().open()
    const flow = store.flow as FlowStore
    // A start that died after its admission, before writing its log (hold until 1100).
    expect(
      await flow.admit({
        ...{ queue: 'workflow:q', key: 'k', limit: 1, now: 1000, holdUntil: 1100 },
        enqueue: entry('ghost'),
      }),
    ).toEqual({ admitted: ['ghost'] })
    expect(await start(store, 'next', 1, {}, 1050)).toEqual([])
    expect(await round(store, 1, 1099)).toEqual([])
    expect(await round(store, 1, 1100)).toEqual(['next'])
    // A queued entry whose log never came is never admitted.
    await flow
      .admit({
        queue: 'workflow:q',
        key: 'k',
        limit: 5,
        now: 1200,
        holdUntil: 1300,
        enqueue: entry('never', { key: 'other' }),
      })
      .catch(() => [])
    expect(await round(store, 5, 2000, 'other')).toEqual([])
  })

  it('reports due keys and admitted runs whose log still says queued', async () => {
    const store = kind.fresh().open()
    const flow = store.flow as FlowStore
    await start(store, 'a', 1)
    await start(store, 'b', 1)
    await start(store, 'c', 1, { startAt: 9000 })
    expect(await flow.pending(1000, 0, 10)).toEqual({
      keys: [{ queue: 'workflow:q', key: 'k' }],
      stalled: [],
    })
    await writeRun(store, 'a', 'completed')
    expect(await round(store, 1, 1500)).toEqual(['b'])
    // b's log still says queued: admitted by a process that stopped before starting it.
    expect((await flow.pending(1600, 1600, 10)).stalled).toEqual(['b'])
    expect((await flow.pending(1600, 1500, 10)).stalled).toEqual([])
    expect((await flow.pending(1600, 1600, 10)).keys).toEqual([])
  })

  it('a window whose start died before its log is orphaned after the hold; a start of its own run takes it back', async () => {
    const store = kind.fresh().open()
    const flow = store.flow as FlowStore
    const window = (runId: string, text: string, at: number) =>
      flow.debounce({
        entry: entry(runId, { key: '', enqueuedAt: at }),
        key: 'd',
        input: { text },
        periodMs: 100,
        abandonedBefore: at - 1000,
      })
    expect(await window('orphan', 'first', 1000)).toEqual({
      runId: 'orphan',
      opened: true,
      endsAt: 1100,
    })
    expect((await window('joiner', 'last', 1050)).runId).toBe('orphan')
    expect(await flow.orphanedWindows(999, 10)).toEqual([])
    expect(await flow.orphanedWindows(1000, 10)).toEqual([
      { runId: 'orphan', queue: 'workflow:q', input: { text: 'last' } },
    ])
    // The run's own start (the sweep's, on the last input) takes its window back.
    expect(await window('orphan', 'last', 3000)).toEqual({
      runId: 'orphan',
      opened: true,
      endsAt: 3100,
    })
    await writeRun(store, 'orphan', 'queued')
    expect(await flow.orphanedWindows(5000, 10)).toEqual([])
    expect(await round(store, 5, 3100, '')).toEqual(['orphan'])
    expect(await flow.admission('orphan')).toEqual({ at: 3100, input: { text: 'last' } })
  })

  it('enqueueAll: the gathered starts queued in order, each admitted as its own round would', async () => {
    const store = kind.fresh().open()
    const flow = store.flow as FlowStore
    await start(store, 'first', 3)
    const all = ['a', 'b', 'c', 'd'].map((runId, i) => entry(runId, { enqueuedAt: 1000 + i }))
    const result = await flow.admit({
      ...{ queue: 'workflow:q', key: 'k', limit: 3, now: 1100, holdUntil: 1200 },
      enqueueAll: all,
    })
    expect(result).toEqual({ admitted: ['a', 'b'] })
    for (const runId of ['a', 'b']) await writeRun(store, runId, 'running')
    for (const runId of ['c', 'd']) await writeRun(store, runId, 'queued')
    await writeRun(store, 'a', 'completed')
    expect(await round(store, 3, 1300)).toEqual(['c'])
  })

  it('enqueueAll under a rate: admits what the window leaves and answers when it admits again', async () => {
    const store = kind.fresh().open()
    const flow = store.flow as FlowStore
    const all = ['a', 'b', 'c'].map((runId, i) => entry(runId, { enqueuedAt: 1000 + i }))
    const result = await flow.admit({
      ...{ queue: 'workflow:q', key: 'k', limit: 10, now: 1100, holdUntil: 1200 },
      enqueueAll: all,
      rate: { limit: 2, periodMs: 1000 },
    })
    expect(result).toEqual({ admitted: ['a', 'b'], retryAt: 2100 })
    for (const runId of ['a', 'b']) await writeRun(store, runId, 'completed')
    await writeRun(store, 'c', 'queued')
    const later = await flow.admit({
      ...{ queue: 'workflow:q', key: 'k', limit: 10, now: 2100, holdUntil: 2200 },
      rate: { limit: 2, periodMs: 1000 },
    })
    expect(later.admitted).toEqual(['c'])
  })
})
