// A new run takes its flow-control slot in its first append (`AppendOptions.admit`;
// docs/flow-control.md, "Across processes and hosts"): on every store that says it does
// (`FlowStore.admitsInAppend`), the append admits while the key has a free slot and no run
// waits, atomically with the key's admission rounds, and otherwise writes nothing and fails
// with FLOW_KEY_FULL.
import {
  type AppendAdmission,
  type EventStore,
  FlowKeyFullError,
  type FlowStore,
  type RunMeta,
} from 'skein'
import { makeEnvelopes } from 'skein/testing'
import { describe, expect, it } from 'vitest'
import { storeKinds } from '../support/store-kinds.js'

const kinds = storeKinds('admit-in-append')

const meta = (status: RunMeta['status']): RunMeta => ({
  status,
  kind: 'workflow',
  definitionName: 'q',
  definitionVersion: 'v1',
  createdAt: 1000,
  updatedAt: 1000,
  nextDeadlineAt: null,
})

const admit = (limit: number, now = 1000, over: Partial<AppendAdmission> = {}) => ({
  queue: 'workflow:q',
  key: 'k',
  limit,
  priority: 0,
  now,
  holdUntil: now + 100,
  ...over,
})

/** A new run's first append taking its slot: 'admitted', or 'full' (nothing written). */
async function startInAppend(store: EventStore, runId: string, limit: number, now = 1000) {
  try {
    await store.append(runId, makeEnvelopes(runId, 1, 2), {
      expectedSeq: 0,
      meta: meta('running'),
      admit: admit(limit, now),
    })
    return 'admitted'
  } catch (error) {
    if (FlowKeyFullError.is(error)) return 'full'
    throw error
  }
}

/** Writes the next event of a run with a status (a run's end, a queued start's log). */
async function writeRun(store: EventStore, runId: string, status: RunMeta['status']) {
  const tail = await store.tail(runId)
  await store.append(runId, makeEnvelopes(runId, tail + 1, 1), {
    expectedSeq: tail,
    meta: meta(status),
  })
}

const inAppend = kinds.filter((kind) => kind.fresh().open().flow?.admitsInAppend === true)

describe.each(inAppend)('admission in the first append ($name)', (kind) => {
  it('admits up to the limit in one group; the others write nothing', async () => {
    const store = kind.fresh().open()
    const flow = store.flow as FlowStore
    const ids = ['a1', 'a2', 'a3', 'a4', 'a5']
    // Appended in one turn: one group commit on the stores that group.
    const outcomes = await Promise.all(ids.map((id) => startInAppend(store, id, 3)))
    expect(outcomes.filter((o) => o === 'admitted')).toHaveLength(3)
    for (const [i, id] of ids.entries()) {
      const admitted = outcomes[i] === 'admitted'
      expect(await store.tail(id)).toBe(admitted ? 2 : 0)
      expect((await flow.admission(id))?.at ?? null).toBe(admitted ? 1000 : null)
    }
    expect(await startInAppend(store, 'a6', 3)).toBe('full')
    const [state] = await flow.keys(0)
    expect(state).toMatchObject({ queue: 'workflow:q', key: 'k', active: 3, queued: 0 })
  })

  it('the commit that ends a run frees its slot for the next append', async () => {
    const store = kind.fresh().open()
    expect(await startInAppend(store, 'b1', 1)).toBe('admitted')
    expect(await startInAppend(store, 'b2', 1)).toBe('full')
    await writeRun(store, 'b1', 'completed')
    expect(await startInAppend(store, 'b2', 1, 2000)).toBe('admitted')
    // b1's entry is forgotten: the key holds one slot, b2's.
    const [state] = await (store.flow as FlowStore).keys(0)
    expect(state).toMatchObject({ active: 1, queued: 0 })
  })

  it('never takes a slot before a run that waits in the key', async () => {
    const store = kind.fresh().open()
    const flow = store.flow as FlowStore
    expect(await startInAppend(store, 'c1', 1)).toBe('admitted')
    // c2 queues the ordinary way and waits (its log says queued).
    const entry = { queue: 'workflow:q', key: 'k', priority: 0, startAt: 0, enqueuedAt: 1000 }
    const round = { queue: 'workflow:q', key: 'k', limit: 1, now: 1000, holdUntil: 1100 }
    expect((await flow.admit({ ...round, enqueue: { ...entry, runId: 'c2' } })).admitted).toEqual(
      [],
    )
    await writeRun(store, 'c2', 'queued')
    await writeRun(store, 'c1', 'completed')
    // A slot is free, and c2 waits for it: a new run does not jump ahead.
    expect(await startInAppend(store, 'c3', 1, 2000)).toBe('full')
    expect((await flow.admit({ ...round, now: 2000 })).admitted).toEqual(['c2'])
  })

  it('a refused run fails alone: the other appends of its group commit', async () => {
    const store = kind.fresh().open()
    await writeRun(store, 'other', 'running')
    expect(await startInAppend(store, 'd1', 1)).toBe('admitted')
    const [refused, other] = await Promise.all([
      startInAppend(store, 'd2', 1),
      writeRun(store, 'other', 'running').then(() => 'written'),
    ])
    expect([refused, other]).toEqual(['full', 'written'])
    expect(await store.tail('other')).toBe(2)
    expect(await store.tail('d2')).toBe(0)
  })
})
