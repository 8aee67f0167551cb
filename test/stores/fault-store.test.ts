import { makeEnvelopes } from 'skein/testing'
import { describeEventStore } from 'skein/testing/vitest'
import { describe, expect, it } from 'vitest'
import { SeqConflictError, StoreError } from '../../src/core/errors.js'
import { memoryStore } from '../../src/stores/memory/memory-store.js'
import { faultyStore, isInjectedFault } from '../../src/testing/fault-store.js'

// A healed wrapper must be indistinguishable from the store it wraps.
describeEventStore('faultyStore(memory) with no faults', () => faultyStore(memoryStore()))

const rejection = (p: Promise<unknown>) =>
  p.then(
    () => {
      throw new Error('expected a rejection')
    },
    (error: unknown) => error,
  )

describe('faultyStore', () => {
  it("fails an append 'before': nothing is written and a retry succeeds", async () => {
    const store = faultyStore(memoryStore()).failNext('append', 'before')
    const error = await rejection(store.append('r1', makeEnvelopes('r1', 1, 2), { expectedSeq: 0 }))
    expect(isInjectedFault(error)).toBe(true)
    expect(StoreError.is(error)).toBe(true)
    expect(await store.tail('r1')).toBe(0)
    await store.append('r1', makeEnvelopes('r1', 1, 2), { expectedSeq: 0 })
    expect(await store.tail('r1')).toBe(2)
    expect(store.injected).toEqual([{ method: 'append', when: 'before', index: 1 }])
  })

  it("fails an append 'after': the events are durable and a blind retry conflicts", async () => {
    const store = faultyStore(memoryStore()).failNext('append', 'after')
    const seen: number[] = []
    store.subscribe!('r1', (events) => seen.push(events.length))
    const error = await rejection(store.append('r1', makeEnvelopes('r1', 1, 2), { expectedSeq: 0 }))
    expect(isInjectedFault(error)).toBe(true)
    expect(await store.tail('r1')).toBe(2)
    expect(seen).toEqual([2])
    const retry = await rejection(store.append('r1', makeEnvelopes('r1', 1, 2), { expectedSeq: 0 }))
    expect(SeqConflictError.is(retry)).toBe(true)
  })

  it('matches by method, run and count, and throws a custom error', async () => {
    const boom = new Error('disk on fire')
    const store = faultyStore(memoryStore())
      .failNext('read', 'before', { runId: 'r2', times: 2, error: boom })
      .failNext('*', 'after')
    await store.append('r1', makeEnvelopes('r1', 1, 1), { expectedSeq: 0 }).catch(() => {})
    expect(await store.tail('r1')).toBe(1) // the '*' rule fired 'after' on the append
    expect(await store.read('r1')).toHaveLength(1)
    expect(await rejection(store.read('r2'))).toBe(boom)
    expect(await rejection(store.read('r2'))).toBe(boom)
    expect(await store.read('r2')).toEqual([])
    expect(store.injected.map((f) => `${f.method}:${f.when}`)).toEqual([
      'append:after',
      'read:before',
      'read:before',
    ])
  })

  it('follows a plan function until healed', async () => {
    const store = faultyStore(memoryStore(), ({ index }) => (index % 2 === 0 ? 'before' : null))
    expect(await store.listRuns()).toEqual([])
    await expect(store.listRuns()).rejects.toSatisfy(isInjectedFault)
    expect(await store.bounds('x')).toEqual({ head: 0, tail: 0 })
    await expect(store.tail('x')).rejects.toSatisfy(isInjectedFault)
    store.heal()
    for (let i = 0; i < 4; i++) expect(await store.tail('x')).toBe(0)
    store.failWhen(({ method }) => method === 'trim' && { when: 'after' })
    await store.append('r1', makeEnvelopes('r1', 1, 3), { expectedSeq: 0 })
    await expect(store.trim!('r1', 3)).rejects.toSatisfy(isInjectedFault)
    expect(await store.bounds('r1')).toEqual({ head: 3, tail: 3 })
  })

  it('faults the attached snapshot store too', async () => {
    const store = faultyStore(memoryStore())
    const snapshot = { runId: 'r1', seq: 1, createdAt: 0, format: 1, data: null }
    store.failNext('snapshots.save', 'before', { runId: 'r1' })
    await expect(store.snapshots!.save(snapshot)).rejects.toSatisfy(isInjectedFault)
    expect(await store.snapshots!.list('r1')).toEqual([])
    store.failNext('snapshots.save', 'after')
    await expect(store.snapshots!.save(snapshot)).rejects.toSatisfy(isInjectedFault)
    expect(await store.snapshots!.list('r1')).toEqual([1])
  })

  it('lets a real error win over a planned after-fault', async () => {
    const store = faultyStore(memoryStore()).failNext('append', 'after')
    const error = await rejection(store.append('r1', makeEnvelopes('r1', 2, 1), { expectedSeq: 1 }))
    expect(SeqConflictError.is(error)).toBe(true)
    expect(store.injected).toEqual([])
    await store.append('r1', makeEnvelopes('r1', 1, 1), { expectedSeq: 0 })
  })
})
