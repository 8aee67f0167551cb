// The fan-out and compensation kill loop's child (kill-fan-out.test.ts): on one SQLite file it
// starts (or finds) a 200-item fan-out run and saga runs that compensate, and drives them
// until it is SIGKILLed (mode `work`) or until every run has finished (mode `drain`).
import { setTimeout as sleep } from 'node:timers/promises'
import { createEngine } from 'skein'
import { sqliteStore } from 'skein/sqlite'
import { fan, fanOutModules, SAGAS, saga } from './kill-fan-out-workload.js'

const [path, callsPath, mode] = process.argv.slice(2) as [string, string, string]

const engine = createEngine({
  store: sqliteStore({ path }),
  modules: fanOutModules(callsPath),
  snapshotEvery: 25,
})
const runIds = ['fan', ...Array.from({ length: SAGAS }, (_, i) => `saga-${i}`)]
await engine.ready()
process.stdout.write('ready\n')
for (const runId of runIds) {
  // A start with the same runId finds the run it made before a kill.
  await engine.start(runId === 'fan' ? fan : saga, undefined, { runId })
}
for (;;) {
  let open = 0
  for (const runId of runIds) {
    const state = await engine.getRun(runId)
    if (state.status === 'running') {
      open++
      await engine.wake(runId)
    }
  }
  if (open === 0 && mode === 'drain') break
  await sleep(50)
}
await engine.stop()
process.stdout.write('drained\n')
