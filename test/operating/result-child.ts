// A second process on a shared SQLite file: prints "waiting", then awaits engine.result of the
// run named on the command line and prints its output. Nothing but the pending result holds
// the process open (the store's and the engine's timers are unref'd).
import { createEngine } from 'skein'
import { sqliteStore } from 'skein/sqlite'
import { workflow } from 'skein/workflow'
import { breaks, waits } from './result-workflows.js'

const [path, runId] = process.argv.slice(2) as [string, string]
const engine = createEngine({
  store: sqliteStore({ path }),
  modules: [workflow({ definitions: [waits, breaks] })],
})
await engine.ready()
const pending = engine.result(runId)
process.stdout.write('waiting\n')
const output = await pending
process.stdout.write(`output ${JSON.stringify(output)}\n`)
await engine.stop()
