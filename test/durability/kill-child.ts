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

async function main(): Promise<void> {
  await engine.ready()
  process.stdout.write('ready\n')
  for (;;) {
    const summaries = await allSummaries()
    const running = summaries.filter((s) => s.status === 'running')
    if (mode === 'drain' && summaries.length >= TOTAL_RUNS && running.length === 0) break
    // Start new runs under stable ids and keys: a start that was committed but never
    // acknowledged (killed in between) returns the existing run when it is repeated.
    const starts: Promise<unknown>[] = []
    for (let k = summaries.length; k < TOTAL_RUNS && k < summaries.length + 2; k++) {
      if (running.length + starts.length >= MAX_ACTIVE) break
      const kind = k % 3 === 2 ? 'quick' : 'mixed'
      starts.push(
        engine.startRun({
          kind: 'workflow',
          definitionName: kind,
          input: { n: k },
          runId: `run-${String(k).padStart(3, '0')}`,
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
