// The kill loop's child: runs a mixed workload on one store (a SQLite file or a Postgres
// schema, see store-spec.ts) until it is SIGKILLed
// (mode `work`), or until every run has completed (mode `drain`). Spawned by
// kill-loop.test.ts with `--conditions=skein-source --import tsx`.
import { setTimeout as sleep } from 'node:timers/promises'
import { createEngine, type Engine, type EventInput, type RunSummary } from 'skein'
import { decision } from 'skein/approval'
import { ackingStore } from './ack-store.js'
import { killModules } from './kill-workload.js'
import { openStoreSpec } from './store-spec.js'

const [storeSpec, ackPath, mode, totalText] = process.argv.slice(2)
const TOTAL_RUNS = Number(totalText)
const MAX_ACTIVE = 12

const store = ackingStore(openStoreSpec(storeSpec), ackPath)
/** SKEIN_KILL_POLL_MS: claim due runs this often (a few ms makes the claim tick race passes). */
const pollMs = process.env.SKEIN_KILL_POLL_MS
const engine = createEngine({
  store,
  modules: killModules(),
  snapshotEvery: 7,
  ...(pollMs ? { ownership: { pollMs: Number(pollMs) } } : {}),
})
let stalled = 0

/** Signals whatever a run's open waits ask for; keys are stable across restarts. */
async function drive(e: Engine, runId: string): Promise<void> {
  const status = await e.inspectRun(runId)
  if (status.status !== 'running') return
  for (const wait of status.waits) {
    const on = wait.on as { event?: { type: string; match?: Record<string, unknown> } }
    if (!on.event) continue
    let event: EventInput
    let key: string
    if (on.event.type === 'approval.decided') {
      const approvalId = String(on.event.match?.approvalId)
      event = decision(approvalId, 'approve')
      key = `decide:${approvalId}`
    } else if (on.event.type === 'kl.poke') {
      event = { type: 'kl.poke', payload: { runId, note: wait.key } }
      key = `poke:${runId}:${wait.key}`
    } else continue
    await e.signal(runId, [event], { idempotencyKey: key })
    // A retried request (as after a lost reply) must be a no-op.
    if (Math.random() < 0.3) await e.signal(runId, [event], { idempotencyKey: key })
  }
  // Nothing open, nothing due, a thread not parked: only an operator wake moves it.
  const parked = status.waits.length > 0 || status.deadlines.length > 0
  const busy = status.effects.some((x) => x.status === 'started' || x.status === 'requested')
  if (!parked && !busy) {
    const again = await e.inspectRun(runId)
    if (again.status === 'running' && again.tail === status.tail && again.waits.length === 0) {
      stalled++
      process.stdout.write(`stalled ${runId}\n`)
      await e.wake(runId)
    }
  }
}

/** Every run's summary, page by page (a page holds at most 1,000). */
async function allSummaries(): Promise<RunSummary[]> {
  const all: RunSummary[] = []
  let cursor: string | undefined
  do {
    const page = await engine.listRunSummaries({ limit: 1000, cursor })
    all.push(...page.runs)
    cursor = page.nextCursor ?? undefined
  } while (cursor)
  return all
}

const runIdOf = (k: number) => `run-${String(k).padStart(3, '0')}`

let reportedAt = Date.now()

/** Every 5 s of a drain, on stderr: what still runs and who holds it (the test prints it). */
async function reportProgress(running: string[], stored: number, missing: number[]) {
  if (Date.now() - reportedAt < 5_000) return
  reportedAt = Date.now()
  const lines = [
    `drain: ${stored} of ${TOTAL_RUNS} runs stored, ${running.length} running at ${new Date().toISOString()}`,
  ]
  for (const k of missing) {
    const lease = await store.leases?.readLease(runIdOf(k))
    lines.push(
      `  not stored: ${runIdOf(k)} (tail ${await store.tail(runIdOf(k))}, lease ${lease?.epoch ?? 'none'})`,
    )
  }
  for (const runId of running.slice(0, 5)) {
    const status = await engine.inspectRun(runId)
    const lease = await store.leases?.readLease(runId)
    lines.push(
      `  ${runId} tail=${status.tail} waits=${status.waits.map((w) => w.key).join(',')} deadlines=${status.deadlines.length} effects=${status.effects
        .filter((x) => x.status !== 'completed')
        .map((x) => `${x.effectId}:${x.status}`)
        .join(
          ',',
        )} lease=${lease ? `${lease.owner}/${lease.epoch}/${lease.expiresAt - Date.now()}ms` : 'none'}`,
    )
  }
  process.stderr.write(`${lines.join('\n')}\n`)
}

async function main(): Promise<void> {
  await engine.ready()
  process.stdout.write('ready\n')
  for (;;) {
    const summaries = await allSummaries()
    const running = summaries.filter((s) => s.status === 'running')
    if (mode === 'drain' && summaries.length >= TOTAL_RUNS && running.length === 0) break
    // Start new runs under stable ids and keys: a start that was committed but never
    // acknowledged (killed in between) returns the existing run when it is repeated. The
    // lowest ids not in the store first: two starts run at once, so a kill can leave a hole
    // (run k+1 committed, run k not), which counting the stored runs would never fill.
    const stored = new Set(summaries.map((s) => s.runId))
    const missing: number[] = []
    for (let k = 0; k < TOTAL_RUNS && missing.length < 2; k++) {
      if (!stored.has(runIdOf(k))) missing.push(k)
    }
    if (mode === 'drain')
      await reportProgress(
        running.map((s) => s.runId),
        summaries.length,
        missing,
      )
    if (mode === 'drain') {
      await reportProgress(
        running.map((s) => s.runId),
        summaries.length,
        missing,
      )
    }
    const starts: Promise<unknown>[] = []
    for (const k of missing) {
      if (running.length + starts.length >= MAX_ACTIVE) break
      const kind = k % 3 === 2 ? 'quick' : 'mixed'
      starts.push(
        engine.startRun({
          kind: 'workflow',
          definitionName: kind,
          input: { n: k },
          runId: runIdOf(k),
          idempotencyKey: `start-${k}`,
        }),
      )
    }
    await Promise.all([...starts, ...running.map((s) => drive(engine, s.runId))])
    await sleep(mode === 'drain' ? 5 : 2)
  }
  await (await engine.runtime).idle()
  await engine.stop()
  await store.close?.()
  process.stdout.write(`done stalled=${stalled}\n`)
}

main().catch((error) => {
  process.stderr.write(`kill child failed: ${error?.stack ?? error}\n`)
  process.exit(1)
})
