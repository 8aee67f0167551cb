// The replication crash loop's child (replication-crash.test.ts): runs the kill loop's workload
// on a SQLite file and replicates every run's committed events to a JetStream stream through
// `natsReplica`, until it is SIGKILLed (mode `work`), or, in mode `finish`, until the engine's
// recovery has settled and every event is replicated. Spawned with
// `--conditions=skein-source --import tsx`.
//
// Until the engine's projector runtime is merged this file delivers the batches itself, the way
// that runtime does: per run, in seq order, after commit, from a checkpoint saved only after
// the batch was handled (so a kill between the two delivers the batch again: at least once).
import { readFileSync, renameSync, writeFileSync } from 'node:fs'
import { setTimeout as sleep } from 'node:timers/promises'
import { createEngine } from 'skein'
import { decision } from 'skein/approval'
import { natsReplica } from 'skein/nats'
import { sqliteStore } from 'skein/sqlite'
import { killModules } from '../durability/kill-workload.js'

const [dbPath, checkpointPath, natsUrl, stream, mode, seedText] = process.argv.slice(2)
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
const engine = createEngine({ store, modules: killModules(), snapshotEvery: 7 })
const replica = natsReplica({ servers: natsUrl, stream })
const abort = new AbortController()

const checkpoints: Record<string, number> = (() => {
  try {
    return JSON.parse(readFileSync(checkpointPath, 'utf8'))
  } catch {
    return {}
  }
})()
const saveCheckpoints = () => {
  writeFileSync(`${checkpointPath}.tmp`, JSON.stringify(checkpoints))
  renameSync(`${checkpointPath}.tmp`, checkpointPath)
}

/** One pass over every run: what is past its checkpoint goes to the replica, then the checkpoint. */
async function replicateOnce(): Promise<number> {
  let moved = 0
  for (const runId of await store.listRuns()) {
    const events = await store.read(runId, { fromSeq: (checkpoints[runId] ?? 0) + 1, limit: 200 })
    if (events.length === 0) continue
    await replica.handle(
      { runId, events },
      { projector: replica.name, attempt: 1, signal: abort.signal },
    )
    checkpoints[runId] = events[events.length - 1].seq
    saveCheckpoints()
    moved += events.length
  }
  return moved
}

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

async function replicateForever(): Promise<never> {
  for (;;) if ((await replicateOnce()) === 0) await sleep(5)
}

async function main(): Promise<void> {
  await engine.ready()
  process.stdout.write('ready\n')
  if (mode === 'work') {
    await Promise.all([work(), replicateForever()])
    return
  }
  // finish: let recovery settle (interrupted attempts, due timers), then replicate the rest.
  await (await engine.runtime).idle()
  await engine.stop()
  while ((await replicateOnce()) > 0) {}
  await replica.close()
  await store.close?.()
  process.stdout.write('done\n')
}

main().catch((error) => {
  process.stderr.write(`replication child failed: ${error?.stack ?? error}\n`)
  process.exit(1)
})
