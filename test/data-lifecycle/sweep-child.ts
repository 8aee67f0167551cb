// A process for sweep-kill.test.ts, spawned with `--conditions=skein-source --import tsx`: an
// engine with retention on a SQLite file (`sqlite <path>`) or a Postgres schema (`postgres
// <url> <schema>`), printing "batch <n>" per deleting batch, until the parent SIGKILLs it
// mid-sweep. The engine's timers never hold a process open (docs/data-lifecycle.md): the interval
// at the end does, or the process could exit before the sweep's first round.
import { createEngine } from 'skein'
import { postgresStore } from 'skein/postgres'
import { sqliteStore } from 'skein/sqlite'
import { workflow } from 'skein/workflow'

const [kind, target, schema] = process.argv.slice(2)
const engine = createEngine({
  store:
    kind === 'postgres'
      ? postgresStore({ connectionString: target }, { schema, maxConnections: 2 })
      : sqliteStore({ path: target }),
  modules: [workflow({ definitions: [] })],
  retention: { finishedAfterMs: 3_600_000, batchSize: 50, intervalMs: 3000 },
  observer: (o) => {
    if (o.type === 'retention.batch') process.stdout.write(`batch ${o.deleted}\n`)
  },
})
await engine.ready()
setInterval(() => {}, 60_000)
