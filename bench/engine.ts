import { pathToFileURL } from 'node:url'
// Imports the package by name: `npm run bench` builds first and runs the compiled dist/,
// what users run (not the TypeScript sources through a loader).
import {
  createEngine,
  defineEffect,
  defineModule,
  type Engine,
  type EventEnvelope,
  memoryStore,
  type SnapshotStore,
} from 'skein'
import { approval } from 'skein/approval'
import { defineWorkflow, workflow } from 'skein/workflow'
import { median, percentile, printRows, type Row } from './table.js'

const ROUNDS = 5
/** Runs before measuring, so figures are a warmed-up host's (JIT tiers, heap sizing). */
const WARMUP_RUNS = 4000
const now = () => performance.now()

const three = defineWorkflow({
  name: 'three',
  nodes: {
    a: { run: ({ input }) => ({ n: input.n + 1 }) },
    b: { after: ['a'], run: ({ results }) => ({ n: results.a.n * 2 }) },
    c: { after: ['b'], run: ({ results }) => ({ n: results.b.n - 1 }) },
  },
})
const chainNodes: Record<string, any> = {}
for (let i = 0; i < 10; i++) {
  chainNodes[`s${i}`] = {
    after: i === 0 ? [] : [`s${i - 1}`],
    run: (ctx: any) => ctx.invoke('bench.step', { i }),
  }
}
const chain = defineWorkflow({ name: 'chain10', nodes: chainNodes })
const parked = defineWorkflow({
  name: 'parked',
  nodes: {
    w: { run: (ctx) => ctx.waitFor('app.go', { match: { go: true } }) },
    done: { after: ['w'], run: () => 'resumed' },
  },
})
const gated = defineWorkflow({
  name: 'gated',
  nodes: { g: { run: (ctx) => ctx.gate({ title: 'ok?' }) } },
})
const benchModule = defineModule({
  namespace: 'bench',
  effects: { step: defineEffect({ execute: async (input: { i: number }) => ({ ok: input.i }) }) },
})
const modules = () => [
  workflow({ definitions: [three, chain, parked, gated] }),
  approval(),
  benchModule,
]

/** The hand-written floor: the same envelopes appended in the same batches, no engine. */
async function floorRunsPerSecond(template: EventEnvelope[][], runs: number): Promise<number> {
  const store = memoryStore()
  const start = now()
  for (let r = 0; r < runs; r++) {
    const runId = `floor-${r}`
    let seq = 0
    for (const batch of template) {
      const events = batch.map((e) => ({ ...e, id: `${runId}-${seq + 1}`, runId, seq: ++seq }))
      await store.append(runId, events, { expectedSeq: seq - events.length })
    }
  }
  return runs / ((now() - start) / 1000)
}

async function batchesOf(engine: Engine, runId: string): Promise<EventEnvelope[][]> {
  const store = await engine.store
  const events = await store.read(runId)
  const batches = new Map<number, EventEnvelope[]>()
  for (const e of events) batches.set(e.ts, [...(batches.get(e.ts) ?? []), e])
  return [...batches.values()]
}

async function threeNode(): Promise<Row[]> {
  const runs = 5000
  const skein: number[] = []
  const floor: number[] = []
  let template: EventEnvelope[][] = []
  // JIT warm-up on a throwaway engine: the figure is a long-running host's steady state.
  const warm = createEngine({ modules: modules() })
  for (let i = 0; i < WARMUP_RUNS; i++) await warm.start(three, { n: i })
  await warm.stop()
  for (let round = 0; round < ROUNDS; round++) {
    const engine = createEngine({ modules: modules() })
    await engine.start(three, { n: 0 })
    const start = now()
    for (let i = 0; i < runs; i++) await engine.start(three, { n: i })
    skein.push(runs / ((now() - start) / 1000))
    const { runId } = await engine.start(three, { n: 1 })
    template = await batchesOf(engine, runId)
    await engine.stop()
    floor.push(await floorRunsPerSecond(template, runs))
  }
  const value = median(skein)
  const baseline = median(floor)
  return [
    {
      name: '3-node workflow start→complete',
      value,
      unit: 'runs/s',
      baseline,
      ratio: value / baseline,
      target: 10_000,
      note: `${template.flat().length} events in ${template.length} append(s)`,
    },
  ]
}

async function effectChain(): Promise<Row[]> {
  const engine = createEngine({ modules: modules() })
  const latencies: number[] = []
  const rates: number[] = []
  for (let i = 0; i < WARMUP_RUNS / 2; i++) await engine.start(chain) // warm the JIT
  const runs = 500
  for (let round = 0; round < ROUNDS; round++) {
    const start = now()
    for (let i = 0; i < runs; i++) {
      const t = now()
      const { state } = await engine.start(chain)
      latencies.push(now() - t)
      if (state.status !== 'completed') throw new Error(`chain ended ${state.status}`)
    }
    rates.push((runs * 10) / ((now() - start) / 1000))
  }
  await engine.stop()
  return [
    { name: '10-step effect chain p50', value: median(latencies), unit: 'ms', target: 2 },
    { name: '10-step effect chain p99', value: percentile(latencies, 99), unit: 'ms' },
    {
      name: '10-step effect chain',
      value: median(rates),
      unit: 'steps/s',
      target: 20_000,
      note: `median of ${ROUNDS} rounds of ${runs} runs`,
    },
  ]
}

async function signalResume(): Promise<Row[]> {
  const engine = createEngine({ modules: modules() })
  const runs = 2000
  const ids: string[] = []
  for (let i = 0; i < runs; i++) ids.push((await engine.start(parked)).runId)
  const latencies: number[] = []
  for (const runId of ids) {
    const t = now()
    const state = await engine.signal(runId, [{ type: 'app.go', payload: { go: true } }])
    latencies.push(now() - t)
    if (state.status !== 'completed') throw new Error('did not resume')
  }
  await engine.stop()
  return [
    {
      name: 'signal → resume of a parked run p50',
      value: median(latencies),
      unit: 'ms',
      target: 0.5,
    },
    { name: 'signal → resume p99', value: percentile(latencies, 99), unit: 'ms' },
  ]
}

const discardSnapshots: SnapshotStore = {
  save: async () => {},
  latest: async () => null,
  list: async () => [],
  prune: async () => 0,
}

async function bigRun(
  events: number,
  snapshots: boolean,
): Promise<{ engine: Engine; runId: string }> {
  const store = memoryStore()
  const opts = snapshots ? {} : { snapshotStore: discardSnapshots }
  const writer = createEngine({ modules: modules(), store, ...opts })
  const { runId } = await writer.start(gated)
  const batch = 1000
  for (let n = 0; n < events; n += batch) {
    const size = Math.min(batch, events - n)
    await writer.signal(
      runId,
      Array.from({ length: size }, (_, i) => ({ type: 'app.tick', payload: { i: n + i } })),
    )
  }
  await writer.stop()
  return { engine: createEngine({ modules: modules(), store, ...opts }), runId }
}

async function coldGetRun(engine: Engine, runId: string, reps: number): Promise<number> {
  const times: number[] = []
  for (let i = 0; i < reps; i++) {
    const t = now()
    await engine.getRun(runId)
    times.push(now() - t)
  }
  return median(times)
}

async function getRunBySize(): Promise<Row[]> {
  const small = await bigRun(1_000, true)
  const large = await bigRun(100_000, true)
  const bare = await bigRun(100_000, false)
  const s = await coldGetRun(small.engine, small.runId, 50)
  const l = await coldGetRun(large.engine, large.runId, 50)
  const b = await coldGetRun(bare.engine, bare.runId, 5)
  return [
    { name: 'getRun, 1,000-event run (snapshots)', value: s, unit: 'ms' },
    {
      name: 'getRun, 100,000-event run (snapshots)',
      value: l,
      unit: 'ms',
      baseline: s,
      ratio: l / s,
      target: 2,
    },
    {
      name: 'getRun, 100,000-event run (no snapshots)',
      value: b,
      unit: 'ms',
      baseline: s,
      ratio: b / s,
    },
  ]
}

async function heapPerParkedRun(): Promise<Row[]> {
  const gc = (globalThis as any).gc as (() => void) | undefined
  if (!gc)
    return [
      { name: 'heap per parked run', value: Number.NaN, unit: 'B', note: 'run with --expose-gc' },
    ]
  const runs = 100_000
  const store = memoryStore()
  let engine: Engine | undefined = createEngine({ modules: modules(), store, runCacheSize: 0 })
  for (let i = 0; i < runs; i++) await engine.start(gated)
  gc()
  const withEngine = process.memoryUsage().heapUsed
  await engine.stop()
  engine = undefined
  gc()
  const storeOnly = process.memoryUsage().heapUsed
  // Keep the store (the runs' own data) alive past the measurement.
  if ((await store.listRuns()).length !== runs) throw new Error('runs lost')
  const perRunTotal = withEngine / runs
  return [
    {
      name: 'engine heap per parked run (runCacheSize 0)',
      value: (withEngine - storeOnly) / runs,
      unit: 'B',
      target: 0,
      note: `store data ≈ ${Math.round(storeOnly / runs)} B/run; ${runs.toLocaleString('en')} runs; total ${Math.round(perRunTotal)} B/run`,
    },
  ]
}

export async function benchEngine(): Promise<Row[]> {
  return [
    ...(await threeNode()),
    ...(await effectChain()),
    ...(await signalResume()),
    ...(await getRunBySize()),
    ...(await heapPerParkedRun()),
  ]
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  printRows('engine (in memory)', await benchEngine())
}
