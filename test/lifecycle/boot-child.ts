// A process for boot-recovery.test.ts, spawned with `--conditions=skein-source --import tsx`.
// `first`: starts a run whose effect never finishes in this process and a run sleeping 300 ms,
// prints "ready", and waits to be SIGKILLed. `second`: only creates the engine on the same
// file (no call at all) and logs JSON lines to stdout; the parent watches the file.
import { consoleLogger, createEngine, defineEffect, defineModule } from 'skein'
import { sqliteStore } from 'skein/sqlite'
import { defineWorkflow, workflow } from 'skein/workflow'

const [mode, db] = process.argv.slice(2)

const effects = defineModule({
  namespace: 'boot',
  effects: {
    call: defineEffect<null, string>({
      retry: { maxAttempts: 3 },
      execute: () => (mode === 'first' ? new Promise<string>(() => {}) : 'done after restart'),
    }),
  },
})
const inFlight = defineWorkflow({
  name: 'in-flight',
  nodes: { call: { run: (ctx) => ctx.invoke('boot.call') } },
})
const nap = defineWorkflow({
  name: 'nap',
  nodes: {
    sleep: { run: (ctx) => ctx.sleep(300) },
    after: { after: ['sleep'], run: () => 'woke' },
  },
})

const engine = createEngine({
  store: sqliteStore({ path: db }),
  modules: [workflow({ definitions: [inFlight, nap] }), effects],
  ...(mode === 'second' ? { logger: consoleLogger({ format: 'json' }) } : {}),
})

if (mode === 'first') {
  const a = await engine.start(inFlight, undefined, { runId: 'in-flight' })
  const b = await engine.start(nap, undefined, { runId: 'nap' })
  process.stdout.write(`ready ${a.state.status} ${b.state.status}\n`)
}
// Keeps the process alive until it is killed (the engine's own timers may be unref'd).
setInterval(() => {}, 60_000)
