import {
  type ClaimStore,
  createEngine,
  defineEffect,
  defineModule,
  type Engine,
  type EventStore,
  RuntimeEvents,
} from 'skein'
import { defineWorkflow, workflow } from 'skein/workflow'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { storeKinds } from '../support/store-kinds.js'

const kinds = storeKinds('flow-effect-limits')
const engines: Engine[] = []
afterEach(async () => {
  await Promise.all(engines.splice(0).map((engine) => engine.stop()))
})

/** `store` whose claims report each rate token taken (its `now`) to `taken`. */
function tapRateTokens(store: EventStore, taken: number[]): EventStore {
  const claims = store.claims as ClaimStore
  const tapped: ClaimStore = {
    shared: claims.shared,
    read: (name) => claims.read(name),
    list: (prefix) => claims.list(prefix),
    release: (name, owner, epoch) => claims.release(name, owner, epoch),
    async claim(name, owner, now, expiresAt) {
      const claim = await claims.claim(name, owner, now, expiresAt)
      if (claim && name.startsWith('effect-rate:')) taken.push(now)
      return claim
    },
  }
  return new Proxy(store, {
    get(target, property) {
      if (property === 'claims') return tapped
      const value = Reflect.get(target, property)
      return typeof value === 'function' ? value.bind(target) : value
    },
  })
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/** Handlers running now and the most seen at once, per key, measured by the handlers. */
function meter() {
  const now = new Map<string, number>()
  const max = new Map<string, number>()
  return {
    max,
    async around<T>(key: string, work: () => Promise<T>): Promise<T> {
      const n = (now.get(key) ?? 0) + 1
      now.set(key, n)
      max.set(key, Math.max(max.get(key) ?? 0, n))
      try {
        return await work()
      } finally {
        now.set(key, (now.get(key) ?? 1) - 1)
      }
    },
  }
}

describe.each(kinds)('flow control of effects ($name)', (kind) => {
  it('concurrency: at most `limit` attempts in flight per key; the rest wait queued, using no retry', async () => {
    const m = meter()
    const call = defineEffect({
      concurrency: { limit: 2, key: (input: { tenant: string }) => input.tenant },
      retry: { maxAttempts: 1 },
      execute: (input: { tenant: string }) => m.around(input.tenant, () => sleep(15)),
    })
    const api = defineModule({ namespace: 'api', effects: { call } })
    const flow = defineWorkflow({
      name: 'caller',
      nodes: { call: { run: (ctx) => ctx.invoke(call, ctx.input as { tenant: string }) } },
    })
    const engine = createEngine({
      store: kind.fresh().open(),
      modules: [workflow({ definitions: [flow] }), api],
    })
    engines.push(engine)
    const runs = await Promise.all(
      Array.from({ length: 12 }, (_, i) =>
        engine.start(flow, { tenant: i % 3 === 0 ? 'b' : 'a' }, { wait: 'settled' }),
      ),
    )
    expect(runs.map((r) => r.state.status)).toEqual(runs.map(() => 'completed'))
    expect(m.max.get('a')).toBe(2)
    expect(m.max.get('b')).toBeLessThanOrEqual(2)
    // Waiting is recorded and costs no attempt: every effect ran once, as attempt 1.
    let queued = 0
    for (const { runId } of runs) {
      const events = await engine.getEvents(runId)
      queued += events.filter((e) => e.type === RuntimeEvents.effectQueued).length
      const started = events.filter((e) => e.type === RuntimeEvents.effectAttemptStarted)
      expect(started.map((e) => (e.payload as { attempt: number }).attempt)).toEqual([1])
    }
    expect(queued).toBeGreaterThan(0)
    // A slot is let go in the store after its attempt ended (release does not hold up the run):
    // the last one may land just after the run settled.
    await vi.waitFor(
      async () =>
        expect((await engine.queues()).filter((q) => q.queue === 'effect:api.call')).toEqual([]),
      { timeout: 5_000, interval: 20 },
    )
  })

  it('rate: no window of periodMs admits more than `limit` attempts', async () => {
    let ran = 0
    const call = defineEffect({
      rate: { limit: 3, periodMs: 100 },
      execute: () => {
        ran++
      },
    })
    const api = defineModule({ namespace: 'api', effects: { call } })
    const flow = defineWorkflow({
      name: 'rated',
      nodes: { call: { run: (ctx) => ctx.invoke(call, {}) } },
    })
    // The admissions as the store grants them: each rate token taken, and when.
    const taken: number[] = []
    const engine = createEngine({
      store: tapRateTokens(kind.fresh().open(), taken),
      modules: [workflow({ definitions: [flow] }), api],
    })
    engines.push(engine)
    const runs = await Promise.all(
      Array.from({ length: 9 }, () => engine.start(flow, undefined, { wait: 'settled' })),
    )
    expect(runs.map((r) => r.state.status)).toEqual(runs.map(() => 'completed'))
    expect(ran).toBe(9)
    expect(taken).toHaveLength(9)
    taken.sort((a, b) => a - b)
    // A token frees `periodMs` after it was taken: any 4 admissions span at least the period.
    for (let i = 3; i < taken.length; i++)
      expect(taken[i] - taken[i - 3]).toBeGreaterThanOrEqual(100)
  })

  it('refuses bad limits when the engine is composed', () => {
    const bad = defineEffect({ concurrency: { limit: 0 }, execute: () => null })
    const inline = defineEffect({
      rate: { limit: 1, periodMs: 10 },
      execution: 'inline',
      execute: () => null,
    })
    for (const effect of [bad, inline]) {
      const mod = defineModule({ namespace: 'bad', effects: { effect } })
      expect(() => createEngine({ modules: [mod] })).toThrow(/concurrency|rate/)
    }
  })
})
