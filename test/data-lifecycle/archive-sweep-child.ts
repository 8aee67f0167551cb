// A process for archive-kill.test.ts, spawned with `--conditions=skein-source --import tsx`: an
// engine with an archiving retention sweep on the SQLite file `db`, archiving to `dir`,
// printing "batch <n>" per batch. With `kill`, the sixth batch's archive write resolves and
// the sweep then stops before deleting ("held"): the parent SIGKILLs it there, between archive
// and delete. With `finish`, it runs until no run is left, then prints "done".
import { type ArchiveSink, createEngine, jsonlArchive } from 'skein'
import { sqliteStore } from 'skein/sqlite'
import { workflow } from 'skein/workflow'

const [db, dir, mode] = process.argv.slice(2)
const store = sqliteStore({ path: db })
const files = jsonlArchive({ dir })
let writes = 0
const archive: ArchiveSink = {
  name: files.name,
  async write(runs) {
    await files.write(runs)
    if (mode === 'kill' && ++writes === 6) {
      process.stdout.write('held\n')
      await new Promise(() => {})
    }
  },
}
const engine = createEngine({
  store,
  modules: [workflow({ definitions: [] })],
  retention: {
    finishedAfterMs: 1000,
    batchSize: 50,
    // Short: the claim of a killed sweeper lapses after max(10 s, 3 intervals).
    intervalMs: 1000,
    archive,
  },
  observer: (o) => {
    if (o.type === 'retention.batch') process.stdout.write(`batch ${o.deleted}\n`)
  },
})
await engine.ready()
if (mode === 'finish') {
  for (;;) {
    const status = await engine.retention()
    if (status.lastSweep?.finishedAt && (await store.listRuns()).length === 0) break
    await new Promise((r) => setTimeout(r, 50))
  }
  process.stdout.write('done\n')
  await engine.stop()
} else {
  // The engine's timers never hold a process open: this does, until the parent's SIGKILL.
  setInterval(() => {}, 60_000)
}
