import { type EventStore, memoryStore, storeCapabilities } from 'skein'
import { defineWorkflow, workflow } from 'skein/workflow'
import { describe, expect, it } from 'vitest'
import { enginesStoppedAfterEach } from '../support/engines.js'

// A store states what it can do (`capabilities`); createEngine checks the statement once, at
// boot, and the engine calls an optional member only when its capability is declared.

const newEngine = enginesStoppedAfterEach()
const hello = defineWorkflow({
  name: 'hello',
  nodes: { greet: { run: () => 1 } },
})

/** A memory store seen through a plain object: the five calls, plus `extra`. */
function view(extra: Partial<EventStore> = {}): EventStore & { appends: number } {
  const inner = memoryStore()
  const store = {
    appends: 0,
    append: (...args: Parameters<EventStore['append']>) => {
      store.appends++
      return inner.append(...args)
    },
    read: inner.read.bind(inner),
    tail: inner.tail.bind(inner),
    bounds: inner.bounds.bind(inner),
    listRuns: inner.listRuns.bind(inner),
    ...extra,
  }
  return store
}

describe('store capabilities', () => {
  it('refuses a store that declares a capability it does not have, writing nothing', async () => {
    const store = view({ capabilities: { trim: true } })
    const engine = newEngine({ store, modules: [workflow({ definitions: [hello] })] })
    await expect(engine.ready()).rejects.toThrow(
      'createEngine: the store declares capabilities.trim but has no store.trim',
    )
    await expect(engine.start(hello)).rejects.toThrow(/capabilities\.trim/)
    expect(store.appends).toBe(0)
  })

  it('refuses a store that has an optional member it does not declare', async () => {
    const store = view({ subscribe: () => () => {} })
    const engine = newEngine({ store })
    await expect(engine.ready()).rejects.toThrow(
      'createEngine: the store has store.subscribe but does not declare capabilities.subscribe: true',
    )
  })

  it('refuses an unknown capability and a value that is not a boolean', () => {
    const unknown = view({ capabilities: { teleport: true } as never })
    expect(() => storeCapabilities(unknown, 'test')).toThrow(
      /store.capabilities.teleport is not a capability/,
    )
    const notBoolean = view({ capabilities: { trim: 'yes' } as never })
    expect(() => storeCapabilities(notBoolean, 'test')).toThrow(
      /capabilities.trim must be a boolean/,
    )
  })

  it('refuses options whose capability the store does not declare', async () => {
    const trim = newEngine({ store: view(), trimAfterSnapshot: { keepSnapshots: 1 } })
    await expect(trim.ready()).rejects.toThrow(
      'createEngine: trimAfterSnapshot needs a store with capabilities.trim',
    )
    const owned = newEngine({ store: view(), ownership: { leaseMs: 5_000 } })
    await expect(owned.ready()).rejects.toThrow(
      'createEngine: ownership needs a store with capabilities.leases',
    )
  })

  it('runs on a store with only the five calls, and refuses only what needs more', async () => {
    const store = view()
    const engine = newEngine({ store, modules: [workflow({ definitions: [hello] })] })
    const { runId, state } = await engine.start(hello)
    expect(state.status).toBe('completed')
    // Summaries are folded run by run; live streams need `subscribe`.
    const page = await engine.listRunSummaries()
    expect(page.runs.map((r) => [r.runId, r.status])).toEqual([[runId, 'completed']])
    await expect(engine.subscribe(runId, () => {})).rejects.toThrow(/live subscriptions/)
  })

  it('the shipped stores declare what they have', () => {
    expect(storeCapabilities(memoryStore(), 'test')).toEqual({
      subscribe: true,
      summaries: true,
      deadlines: true,
      trim: true,
      flush: false,
      snapshots: true,
      leases: true,
      feed: true,
      claims: true,
      schedules: true,
      waitUrls: true,
      flow: true,
      workerTasks: true,
      deleteRun: true,
      deleteFinished: true,
      countActiveRuns: true,
      restoreTrimmed: true,
      idempotencyKeys: true,
    })
  })
})
