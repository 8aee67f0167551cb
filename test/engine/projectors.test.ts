import {
  defineEffect,
  defineInput,
  defineModule,
  defineProjector,
  type Observation,
  type ProjectorBatch,
} from 'skein'
import { defineWorkflow, workflow } from 'skein/workflow'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { enginesStoppedAfterEach } from '../support/engines.js'
import { storeKinds } from '../support/store-kinds.js'

// Post-commit projectors: every committed event reaches every projector in seq
// order per run, off the commit path; checkpoints survive a restart; one failing projector
// holds back only itself.

const kinds = storeKinds('projectors')
const newEngine = enginesStoppedAfterEach()

const fx = defineModule({
  namespace: 'pj',
  events: { go: defineInput(z.object({})) },
  effects: { step: defineEffect<{ n: number }, number>({ execute: async ({ n }) => n }) },
})
const flow = defineWorkflow({
  name: 'flow',
  nodes: {
    a: { run: (ctx) => ctx.invoke('pj.step', { n: 1 }) },
    b: { after: ['a'], run: (ctx) => ctx.invoke('pj.step', { n: 2 }) },
  },
})
/** Two waits for `pj.go` with effects around them: snapshots at every step with snapshotEvery 2. */
const waiter = defineWorkflow({
  name: 'waiter',
  nodes: {
    a: { run: (ctx) => ctx.invoke('pj.step', { n: 1 }) },
    w1: { after: ['a'], run: (ctx) => ctx.waitFor('pj.go') },
    b: { after: ['w1'], run: (ctx) => ctx.invoke('pj.step', { n: 2 }) },
    w2: { after: ['b'], run: (ctx) => ctx.waitFor('pj.go') },
    c: { after: ['w2'], run: (ctx) => ctx.invoke('pj.step', { n: 3 }) },
  },
})
const modules = [workflow({ definitions: [flow, waiter] }), fx]
const fast = { pollMs: 20, backoff: { initialMs: 5, maxMs: 40 }, failAfter: 3 }

/** A projector that records what it is handed, by run. */
function recorder(name: string, fail?: (batch: ProjectorBatch) => boolean) {
  const seen = new Map<string, number[]>()
  const batches: ProjectorBatch[] = []
  const projector = defineProjector({
    name,
    handle(batch) {
      if (fail?.(batch)) throw new Error(`${name} refuses ${batch.runId}`)
      batches.push(batch)
      const seqs = seen.get(batch.runId) ?? []
      for (const e of batch.events) seqs.push(e.seq)
      seen.set(batch.runId, seqs)
    },
  })
  return { projector, seen, batches }
}

async function until(check: () => boolean | Promise<boolean>, what: string, ms = 20_000) {
  const deadline = Date.now() + ms
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise((r) => setTimeout(r, 10))
  }
}

/** Every seq of the run's log, in order, each at least once, with no step back. */
function inOrder(seqs: number[] | undefined, tail: number): boolean {
  if (!seqs) return tail === 0
  let last = 0
  for (const s of seqs) {
    if (s > last + 1) return false
    last = Math.max(last, s)
  }
  return last === tail
}

describe.each(kinds)('projectors on $name', (kind) => {
  it('hands every committed event to every projector, in seq order per run', async () => {
    const storage = kind.fresh()
    const one = recorder('one')
    const two = recorder('two')
    const engine = newEngine({
      store: storage.open(),
      modules,
      projectors: [one.projector, two.projector],
      projectorOptions: fast,
    })
    const runs = await Promise.all(Array.from({ length: 8 }, () => engine.start(flow)))
    for (const { runId } of runs) {
      const tail = (await engine.getEvents(runId)).length
      await until(() => inOrder(one.seen.get(runId), tail), `one sees ${runId}`)
      await until(() => inOrder(two.seen.get(runId), tail), `two sees ${runId}`)
    }
    const [status] = await engine.projectors()
    expect(status.name).toBe('one')
    expect(status.state).toBe('running')
    expect(status.active).toBe(true)
    await until(async () => (await engine.projectors())[0].lagEvents === 0, 'no lag')
  })

  it('resumes from its checkpoint after a restart: nothing handled again, nothing missed', async () => {
    if (kind.name === 'memory') return // the memory store does not outlive its engine's process
    const storage = kind.fresh()
    const first = recorder('idx')
    const a = newEngine({
      store: storage.open(),
      modules,
      projectors: [first.projector],
      projectorOptions: { ...fast, owner: 'host-1' },
    })
    const r1 = await a.start(flow)
    const tail1 = (await a.getEvents(r1.runId)).length
    await until(() => inOrder(first.seen.get(r1.runId), tail1), 'first engine projects r1')
    const before = (await a.projectors())[0].position
    await a.stop()

    const second = recorder('idx')
    const b = newEngine({
      store: storage.open(),
      modules,
      projectors: [second.projector],
      projectorOptions: { ...fast, owner: 'host-1' },
    })
    const r2 = await b.start(flow)
    const tail2 = (await b.getEvents(r2.runId)).length
    await until(() => inOrder(second.seen.get(r2.runId), tail2), 'second engine projects r2')
    expect(second.seen.has(r1.runId)).toBe(false)
    // The checkpoint moves after the handler returned.
    await until(async () => (await b.projectors())[0].position > before, 'checkpoint moves on')
  })

  it('a projector that throws for one run holds back only itself, and says so', async () => {
    const storage = kind.fresh()
    const observed: Observation[] = []
    let bad = ''
    const broken = recorder('broken', (batch) => batch.runId === bad)
    const healthy = recorder('healthy')
    const engine = newEngine({
      store: storage.open(),
      modules,
      projectors: [broken.projector, healthy.projector],
      projectorOptions: fast,
      authorize: () => true,
      observer: (o) => {
        if (o.type.startsWith('projector.')) observed.push(o)
      },
    })
    bad = 'run-bad'
    await engine.start(flow, undefined, { runId: 'run-bad' })
    const later = await engine.start(flow)
    expect(later.state.status).toBe('completed')
    const tail = (await engine.getEvents(later.runId)).length
    await until(() => inOrder(healthy.seen.get(later.runId), tail), 'healthy projector')
    await until(
      async () => (await engine.projectors())[0].state === 'failing',
      'broken projector failing',
    )
    const [b, h] = await engine.projectors()
    expect(b.lastError?.message).toBe('broken refuses run-bad')
    expect(b.lastError?.runId).toBe('run-bad')
    expect(b.lagEvents).toBeGreaterThan(0)
    expect(b.lagMs).toBeGreaterThanOrEqual(0)
    expect(h.state).toBe('running')
    expect(broken.seen.has(later.runId)).toBe(false)
    const failed = observed.filter((o) => o.type === 'projector.failed')
    expect(failed.length).toBeGreaterThanOrEqual(3)
    expect(failed.at(-1)).toMatchObject({ projector: 'broken', runId: 'run-bad', state: 'failing' })
    expect(observed.some((o) => o.type === 'projector.lag' && o.projector === 'healthy')).toBe(true)

    const response = await engine.fetch(new Request('http://x/operations/projectors'))
    expect(response?.status).toBe(200)
    const body = (await response?.json()) as { projectors: Array<{ name: string; state: string }> }
    expect(body.projectors.map((p) => [p.name, p.state])).toEqual([
      ['broken', 'failing'],
      ['healthy', 'running'],
    ])

    // Once it stops throwing, it catches up and says it recovered.
    bad = ''
    await until(() => inOrder(broken.seen.get(later.runId), tail), 'broken projector recovers')
    await until(async () => (await engine.projectors())[0].state === 'running', 'running again')
    expect(observed.some((o) => o.type === 'projector.recovered')).toBe(true)
  })

  it('two engines on one store: one works the projector, the other takes over when it stops', async () => {
    if (kind.name === 'memory') return // one process by nature
    const storage = kind.fresh()
    const a = recorder('shared')
    const b = recorder('shared')
    const options = { ...fast, leaseMs: 400 }
    const first = newEngine({
      store: storage.open(),
      modules,
      projectors: [a.projector],
      projectorOptions: { ...options, owner: 'a' },
    })
    await until(async () => (await first.projectors())[0].active, 'a claims')
    const second = newEngine({
      store: storage.open(),
      modules,
      projectors: [b.projector],
      projectorOptions: { ...options, owner: 'b' },
    })
    const r1 = await second.start(flow)
    const tail1 = (await second.getEvents(r1.runId)).length
    // The run started on b reaches a's projector (a holds the claim); b hands over nothing.
    await until(() => inOrder(a.seen.get(r1.runId), tail1), 'a projects r1')
    const [onB] = await second.projectors()
    expect(onB).toMatchObject({ active: false, owner: 'a' })
    expect(b.batches).toEqual([])
    await first.stop()
    const r2 = await second.start(flow)
    const tail2 = (await second.getEvents(r2.runId)).length
    await until(() => inOrder(b.seen.get(r2.runId), tail2), 'b takes over and projects r2')
    expect(b.seen.has(r1.runId)).toBe(false)
  })

  it('feed positions follow commit order across two writers: a poller never skips one', async () => {
    const storage = kind.fresh()
    const writers = kind.name === 'memory' ? [storage.open()] : [storage.open(), storage.open()]
    const feed = writers[0].feed!
    const seen = new Map<string, number>()
    let after = 0
    let done = false
    let gaps = 0
    const poll = (async () => {
      while (!done || after < (await feed.headPosition())) {
        for (const { position, event } of await feed.readAfter(after, 50)) {
          if (event.seq !== (seen.get(event.runId) ?? 0) + 1) gaps++
          seen.set(event.runId, event.seq)
          after = position
        }
        await new Promise((r) => setTimeout(r, 1))
      }
    })()
    const now = Date.now()
    await Promise.all(
      Array.from({ length: 24 }, async (_, n) => {
        const store = writers[n % writers.length]
        const runId = `w-${n}`
        for (let seq = 1; seq <= 20; seq++) {
          const event = {
            id: `${runId}-${seq}`,
            runId,
            seq,
            ts: now,
            type: 'app.tick',
            payload: { seq },
            threadId: null,
            origin: 'external' as const,
          }
          await store.append(runId, [event], { expectedSeq: seq - 1 })
        }
      }),
    )
    done = true
    await poll
    expect(gaps).toBe(0)
    expect([...seen.values()]).toEqual(Array.from({ length: 24 }, () => 20))
  })

  it('trimming never removes events a named projector has not checkpointed', async () => {
    const storage = kind.fresh()
    let open = false
    let seen = 0
    const gated = defineProjector({
      name: 'gated',
      handle({ events }) {
        if (!open) throw new Error('not yet')
        seen = Math.max(seen, events[events.length - 1].seq)
      },
    })
    const store = storage.open()
    const engine = newEngine({
      store,
      modules,
      projectors: [gated],
      projectorOptions: fast,
      snapshotEvery: 2,
      trimAfterSnapshot: { keepSnapshots: 1, coverage: ['gated'] },
    })
    const { runId } = await engine.start(waiter)
    const go = { type: 'pj.go', payload: {} }
    await engine.signal(runId, [go], { wait: 'settled' })
    // Snapshots were taken and trimming tried, but nothing is projected: nothing is trimmed.
    expect((await engine.inspectRun(runId)).tail).toBeGreaterThan(6)
    expect((await store.bounds(runId)).head).toBe(1)
    open = true
    await until(async () => (await engine.projectors())[0].lagEvents === 0, 'gated catches up')
    // The next snapshot trims behind it, now that the projector holds those events.
    const state = await engine.signal(runId, [go], { wait: 'settled' })
    expect(state.status).toBe('completed')
    const { head } = await store.bounds(runId)
    expect(head).toBeGreaterThan(1)
    // Only events the projector was handed (and checkpointed) are gone.
    expect(head - 1).toBeLessThanOrEqual(seen)
  })
})

it('refuses projectors on a store without a projection feed, and duplicate names', async () => {
  const engine = newEngine({
    store: {
      append: async () => {},
      read: async () => [],
      tail: async () => 0,
      bounds: async () => ({ head: 0, tail: 0 }),
      listRuns: async () => [],
    },
    projectors: [defineProjector({ name: 'p', handle() {} })],
  })
  await expect(engine.ready()).rejects.toThrow(/projection feed/)
  const twice = newEngine({
    projectors: [
      defineProjector({ name: 'p', handle() {} }),
      defineProjector({ name: 'p', handle() {} }),
    ],
  })
  await expect(twice.ready()).rejects.toThrow(/two projectors are named p/)
})

it('stop does not wait forever for a handler that ignores the abort signal', async () => {
  let called = false
  const hung = defineProjector({
    name: 'hung',
    handle() {
      called = true
      return new Promise<void>(() => {})
    },
  })
  const engine = newEngine({ modules, projectors: [hung], projectorOptions: fast })
  await engine.start(flow)
  await until(() => called, 'the handler is called')
  await engine.stop()
})

it('a module may bring projectors, worked like the engine option’s', async () => {
  const carried = recorder('carried')
  const module = defineModule({ namespace: 'carrier', projectors: [carried.projector] })
  const engine = newEngine({ modules: [...modules, module], projectorOptions: fast })
  const { runId } = await engine.start(flow)
  const tail = (await engine.getEvents(runId)).length
  await until(() => inOrder(carried.seen.get(runId), tail), 'the module’s projector')
  expect((await engine.projectors()).map((p) => p.name)).toEqual(['carried'])
})
