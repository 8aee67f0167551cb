// The projector crash loop's child: starts runs on a SQLite file with a recording projector
// and the SQLite run index until SIGKILLed (mode `work`), or until every run completed and
// both projectors caught up (mode `drain`). Spawned with `--conditions=skein-source --import tsx`.
import { createEngine } from 'skein'
import { sqliteRunIndex, sqliteStore } from 'skein/sqlite'
import { chain, crashModules, recordingProjector, seeded } from './crash-workload.js'

const [dbPath, recordPath, mode, seedText, cycleText] = process.argv.slice(2)
const random = seeded(Number(seedText))
const cycle = Number(cycleText)

const store = sqliteStore({ path: dbPath })
const index = sqliteRunIndex({ store })
const engine = createEngine({
  store,
  modules: crashModules(),
  projectors: [recordingProjector(recordPath), index.projector],
  // The same owner every time: a restarted child resumes the claims at once.
  projectorOptions: { owner: 'crash-child', pollMs: 25, batchSize: 64 },
  snapshotEvery: 5,
})
await engine.ready()
process.stdout.write('ready\n')

if (mode === 'work') {
  let n = 0
  const active = new Set<Promise<unknown>>()
  for (;;) {
    while (active.size < 8) {
      const runId = `run-${cycle}-${n++}`
      const p = engine.start(chain, { n: Math.floor(random() * 100) }, { runId }).catch(() => {})
      active.add(p)
      void p.finally(() => active.delete(p))
    }
    await Promise.race(active)
  }
} else {
  // Drain: every run done (recovery finishes interrupted ones), both projectors caught up.
  for (;;) {
    const runs = await store.listRuns()
    let running = 0
    for (const runId of runs) {
      const state = await engine.getRun(runId)
      if (state.status === 'running') {
        running++
        await engine.wake(runId)
      }
    }
    const lag = (await engine.projectors()).reduce((sum, p) => sum + p.lagEvents, 0)
    if (running === 0 && lag === 0) break
    await new Promise((r) => setTimeout(r, 100))
  }
  await engine.stop()
  await index.close?.()
  await store.close()
  process.stdout.write('drained\n')
}
