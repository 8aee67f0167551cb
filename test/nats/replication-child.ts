// The replication crash loop's child (replication-crash.test.ts): runs the kill loop's workload
// on a SQLite file and replicates every run's committed events to a JetStream stream through
// `natsReplica`, until it is SIGKILLed (mode `work`), or, in mode `finish`, until every event
// the kills left behind is replicated. Spawned with
// `--conditions=skein-source --import tsx`.
//
// The replica is the engine's projector: the projector runtime delivers each run's committed
// events in order, at least once, and moves its checkpoint (in the SQLite file) after a round
// was handled, so a kill in between delivers the round again.
import { setTimeout as sleep } from 'node:timers/promises'
import { createEngine } from 'skein'
import { decision } from 'skein/approval'
import { natsReplica } from 'skein/nats'
import { sqliteStore } from 'skein/sqlite'
import { killModules } from '../durability/kill-workload.js'

const [dbPath, natsUrl, stream, mode, seedText] = process.argv.slice(2)
let seed = Number(seedText) >>> 0
/** mulberry32: the workload's choices are the seed's. */
const random = () => {
  seed = (seed + 0x6d2b79f5) >>> 0
  let t = seed
  t = Math.imul(t ^ (t >>> 15), t | 1)
  t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296
}

const store = await sqliteStore({ path: dbPath })
const replica = natsReplica({ servers: natsUrl, stream })
const engine = createEngine({
  store,
  modules: killModules(),
  snapshotEvery: 7,
  rescanTimers: mode === 'work',
  projectors: [replica],
  // The same owner each time: a restarted child takes its claim back at once.
  projectorOptions: { owner: 'replication-child', pollMs: 20, batchSize: 100 },
})

/** Signals what the mixed runs wait for (keys stable across restarts). */
async function drive(runId: string): Promise<void> {
  const status = await engine.inspectRun(runId)
  if (status.status !== 'running') return
  for (const wait of status.waits) {
    const on = wait.on as { event?: { type: string; match?: Record<string, unknown> } }
    if (on.event?.type === 'approval.decided') {
      const approvalId = String(on.event.match?.approvalId)
      await engine.signal(runId, [decision(approvalId, 'approve')], {
        idempotencyKey: `d:${approvalId}`,
      })
    } else if (on.event?.type === 'kl.poke') {
      await engine.signal(runId, [{ type: 'kl.poke', payload: { runId } }], {
        idempotencyKey: `p:${runId}:${wait.key}`,
      })
    }
  }
}

async function work(): Promise<never> {
  for (let k = 0; ; k++) {
    const runId = `s${seedText}-${k}`
    const definitionName = random() < 0.5 ? 'quick' : 'mixed'
    await engine.startRun({ kind: 'workflow', definitionName, input: { n: k }, runId })
    // Drive a few runs (those of earlier cycles too): the logs of old runs keep growing.
    const runs = await store.listRuns()
    for (let i = 0; i < 3; i++) {
      const id = runs[Math.floor(random() * runs.length)]
      if (id) await drive(id).catch(() => {})
    }
    await sleep(Math.floor(random() * 5))
  }
}

async function main(): Promise<void> {
  await engine.ready()
  process.stdout.write('ready\n')
  if (mode === 'work') {
    await work()
    return
  }
  // finish: nothing runs (no timers rescanned, no work); the replica catches up with the log
  // the kills left behind.
  for (;;) {
    const [status] = await engine.projectors()
    if (status.lagEvents === 0) break
    await sleep(20)
  }
  await engine.stop()
  await replica.close()
  await store.close?.()
  process.stdout.write('done\n')
}

main().catch((error) => {
  process.stderr.write(`replication child failed: ${error?.stack ?? error}\n`)
  process.exit(1)
})
