// Replication of the log to NATS JetStream (skein/nats): how fast the replica publishes, and how
// far it trails the engine while the engine runs the 16-concurrent 3-step workflow load on
// SQLite. Skipped, with a line saying so, when no NATS with JetStream answers.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { jetstream, jetstreamManager } from '@nats-io/jetstream'
import { connect } from '@nats-io/transport-node'
import { createEngine, defineProjector } from 'skein'
import { natsReplica } from 'skein/nats'
import { sqliteStore } from 'skein/sqlite'
import { workflow } from 'skein/workflow'
import { median, percentile, type Row } from './table.js'
import { benchEffects, three } from './three-steps.js'

const NATS_URL = process.env.SKEIN_NATS_URL ?? '127.0.0.1:4222'
const CONCURRENCY = 16
const RUNS = Number(process.env.SKEIN_BENCH_NATS_RUNS ?? 1600)
const ROUNDS = Number(process.env.SKEIN_BENCH_NATS_ROUNDS ?? 3)
/** An offered load the replica can keep up with here (a fraction of its backfill rate). */
const PACED_RUNS_PER_SECOND = Number(process.env.SKEIN_BENCH_NATS_PACE ?? 100)
const now = () => performance.now()

const ctx = { projector: 'bench', attempt: 1, signal: new AbortController().signal }

async function natsUp(): Promise<boolean> {
  try {
    const nc = await connect({ servers: NATS_URL, timeout: 2000 })
    await (await jetstreamManager(nc)).getAccountInfo()
    await nc.close()
    return true
  } catch {
    return false
  }
}

async function deleteStream(name: string): Promise<void> {
  const nc = await connect({ servers: NATS_URL })
  await (await jetstreamManager(nc)).streams.delete(name).catch(() => false)
  await nc.close()
}

/**
 * The engine runs RUNS 3-step workflows, CONCURRENCY at a time, on SQLite, with the replica
 * registered as its projector (`createEngine({ projectors })`). Lag of an event = the time
 * JetStream acknowledged it − its commit timestamp (`ts`), as the projector saw it.
 */
async function underLoad(dir: string, round: number, runsPerSecond?: number) {
  const label = runsPerSecond ? `paced-${round}` : `load-${round}`
  const stream = `skein_bench_${label.replace('-', '_')}_${process.pid}`
  const replica = natsReplica({ servers: NATS_URL, stream })
  const lags: number[] = []
  // The replica, timed: its events are stored once its flush (the end of a round) resolves.
  let handed: number[] = []
  const timed = defineProjector({
    name: replica.name,
    handle(batch, context) {
      for (const event of batch.events) handed.push(event.ts)
      return replica.handle(batch, context)
    },
    async flush(context) {
      await replica.flush(context)
      const acked = Date.now()
      for (const ts of handed) lags.push(acked - ts)
      handed = []
    },
  })
  const store = sqliteStore({ path: join(dir, `${label}.db`) })
  const engine = createEngine({
    store,
    modules: [workflow({ definitions: [three] }), benchEffects],
    projectors: [timed],
  })
  await engine.ready()
  await replica.handle({ runId: 'warm', events: [] }, ctx) // connects, creates the stream
  let next = 0
  const t0 = now()
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      for (let i = next++; i < RUNS; i = next++) {
        // Paced: run i starts no earlier than i / rate seconds in (an offered load, not a race).
        const due = runsPerSecond ? t0 + (i / runsPerSecond) * 1000 - now() : 0
        if (due > 0) await new Promise((resolve) => setTimeout(resolve, due))
        await engine.start(three)
      }
    }),
  )
  const seconds = (now() - t0) / 1000
  // Drain what is left, then stop.
  for (;;) {
    const [status] = await engine.projectors()
    if (status.lagEvents === 0) break
    await new Promise((resolve) => setTimeout(resolve, 10))
  }
  const drained = (now() - t0) / 1000
  await engine.stop()
  await replica.close()
  await store.close()
  await deleteStream(stream)
  return {
    runsPerSecond: RUNS / seconds,
    eventsPerSecond: lags.length / drained,
    lagP50: median(lags),
    lagP99: percentile(lags, 99),
  }
}

/** The same load with no projector: the baseline of the engine's own rate. */
async function withoutReplica(dir: string, round: number) {
  const store = sqliteStore({ path: join(dir, `bare-${round}.db`) })
  const engine = createEngine({
    store,
    modules: [workflow({ definitions: [three] }), benchEffects],
  })
  await engine.ready()
  let next = 0
  const t0 = now()
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      for (let i = next++; i < RUNS; i = next++) await engine.start(three)
    }),
  )
  const seconds = (now() - t0) / 1000
  await engine.stop()
  await store.close()
  return RUNS / seconds
}

/** Replicating logs already on disk (a backfill): every run's whole log, one batch per run. */
async function backfill(dir: string, round: number) {
  const store = sqliteStore({ path: join(dir, `load-${round}.db`) })
  const runIds = await store.listRuns()
  const logs = await Promise.all(runIds.map((runId) => store.read(runId)))
  const stream = `skein_bench_backfill_${process.pid}_${round}`
  const replica = natsReplica({ servers: NATS_URL, stream })
  await replica.handle({ runId: 'warm', events: [] }, ctx)
  let events = 0
  const t0 = now()
  // As the projector runtime hands over a round: run by run, then one flush.
  for (let i = 0; i < runIds.length; i++) {
    await replica.handle({ runId: runIds[i], events: logs[i] }, ctx)
    events += logs[i].length
  }
  await replica.flush(ctx)
  const rate = events / ((now() - t0) / 1000)
  await replica.close()
  await store.close()
  await deleteStream(stream)
  return rate
}

/**
 * The baseline: the same messages published with the bare client (no message id, no replica),
 * 16 runs at a time, each run's acknowledgements awaited.
 */
async function rawPublish(dir: string, round: number) {
  const store = sqliteStore({ path: join(dir, `load-${round}.db`) })
  const runIds = await store.listRuns()
  const logs = await Promise.all(runIds.map((runId) => store.read(runId)))
  await store.close()
  const stream = `skein_bench_raw_${process.pid}_${round}`
  const nc = await connect({ servers: NATS_URL })
  const jsm = await jetstreamManager(nc)
  await jsm.streams.add({ name: stream, subjects: [`raw.${stream}.>`] })
  const js = jetstream(nc)
  let events = 0
  const t0 = now()
  let next = 0
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      for (let i = next++; i < runIds.length; i = next++) {
        await Promise.all(
          logs[i].map((e) => js.publish(`raw.${stream}.${runIds[i]}`, JSON.stringify(e))),
        )
        events += logs[i].length
      }
    }),
  )
  const rate = events / ((now() - t0) / 1000)
  await jsm.streams.delete(stream)
  await nc.close()
  return rate
}

export async function benchNatsReplication(): Promise<Row[]> {
  if (!(await natsUp())) {
    console.log(`\nskipped: no NATS with JetStream at ${NATS_URL} (set SKEIN_NATS_URL)`)
    return []
  }
  const dir = mkdtempSync(join(tmpdir(), 'skein-bench-nats-'))
  try {
    const loads = []
    const bare: number[] = []
    const backfills: number[] = []
    const raws: number[] = []
    const paced = []
    for (let round = 0; round < ROUNDS; round++) {
      paced.push(await underLoad(dir, round, PACED_RUNS_PER_SECOND))
      bare.push(await withoutReplica(dir, round))
      loads.push(await underLoad(dir, round))
      raws.push(await rawPublish(dir, round))
      backfills.push(await backfill(dir, round))
    }
    const raw = median(raws)
    const fill = median(backfills)
    const engineRate = median(bare)
    const withReplica = median(loads.map((l) => l.runsPerSecond))
    return [
      {
        name: 'replication backfill (whole logs handed over run by run, one flush)',
        value: fill,
        unit: 'events/s',
        baseline: raw,
        ratio: fill / raw,
        note: 'baseline: bare JetStream publish of the same messages',
      },
      {
        name: `engine on sqlite + replica, 3-step workflow, ${CONCURRENCY} concurrent`,
        value: withReplica,
        unit: 'runs/s',
        baseline: engineRate,
        ratio: withReplica / engineRate,
        note: 'baseline: the same load with no projector',
      },
      {
        name: '  replicated under that load (start to drained)',
        value: median(loads.map((l) => l.eventsPerSecond)),
        unit: 'events/s',
      },
      {
        name: '  replication lag p50 (commit → JetStream ack; grows while the replica is behind)',
        value: median(loads.map((l) => l.lagP50)),
        unit: 'ms',
      },
      {
        name: '  replication lag p99 (same)',
        value: median(loads.map((l) => l.lagP99)),
        unit: 'ms',
      },
      {
        name: `steady state: ${CONCURRENCY} concurrent, paced at ${PACED_RUNS_PER_SECOND} runs/s, replication lag p50`,
        value: median(paced.map((l) => l.lagP50)),
        unit: 'ms',
        note: `${Math.round(median(paced.map((l) => l.eventsPerSecond)))} events/s replicated`,
      },
      {
        name: `steady state: ${CONCURRENCY} concurrent, paced at ${PACED_RUNS_PER_SECOND} runs/s, replication lag p99`,
        value: median(paced.map((l) => l.lagP99)),
        unit: 'ms',
      },
    ]
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}
