// A process for sweep-kill.test.ts, spawned with `--conditions=skein-source --import tsx`: an
// engine with retention on the SQLite file `db`, printing "batch <n>" per deleting batch, until
// the parent SIGKILLs it mid-sweep.
import { createEngine } from 'skein'
import { sqliteStore } from 'skein/sqlite'
import { workflow } from 'skein/workflow'

const [db] = process.argv.slice(2)
const engine = createEngine({
  store: sqliteStore({ path: db }),
  modules: [workflow({ definitions: [] })],
  retention: { finishedAfterMs: 1000, batchSize: 50, intervalMs: 60_000 },
  observer: (o) => {
    if (o.type === 'retention.batch') process.stdout.write(`batch ${o.deleted}\n`)
  },
})
await engine.ready()
