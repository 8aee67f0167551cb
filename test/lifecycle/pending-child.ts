// A process for pending-calls.test.ts, spawned with `--conditions=skein-source --import tsx`.
// `hold <db>`: starts run `held`, whose effect takes HOLD_MS in this process (so this process
// holds the run's lease), prints "holding", and stays until killed. `signal <db> <n>`: sends n
// signals to `held` with top-level await and ends by itself, no process.exit: the pending calls
// alone must keep it alive while they wait for the lease. `idle <db>`: starts a run that sleeps
// an hour and ends the script without stopping the engine: its unref'd timers must not keep
// the process alive.
import { createEngine, defineEffect, defineInput, defineModule } from 'skein'
import { sqliteStore } from 'skein/sqlite'
import { defineWorkflow, workflow } from 'skein/workflow'
import { z } from 'zod'

const [mode, db, countText] = process.argv.slice(2)
const HOLD_MS = 6000

const hold = defineModule({
  namespace: 'hold',
  events: { note: defineInput(z.object({ i: z.number() })) },
  effects: {
    slow: defineEffect<null, string>({
      execute: () => new Promise((resolve) => setTimeout(() => resolve('done'), HOLD_MS)),
    }),
  },
})
const held = defineWorkflow({
  name: 'held',
  nodes: {
    work: { run: (ctx) => ctx.invoke('hold.slow') },
    park: { after: ['work'], run: (ctx) => ctx.waitFor('hold.done') },
  },
})
const nap = defineWorkflow({
  name: 'nap',
  nodes: { sleep: { run: (ctx) => ctx.sleep(3_600_000) } },
})

const engine = createEngine({
  store: sqliteStore({ path: db as string }),
  modules: [workflow({ definitions: [held, nap] }), hold],
})

if (mode === 'hold') {
  await engine.start(held, undefined, { runId: 'held' })
  process.stdout.write('holding\n')
  process.stdin.resume() // until the parent kills it
} else if (mode === 'signal') {
  const count = Number(countText)
  const states = await Promise.all(
    Array.from({ length: count }, (_, i) =>
      engine.signal('held', [{ type: 'hold.note', payload: { i } }], { idempotencyKey: `n${i}` }),
    ),
  )
  process.stdout.write(`signalled ${states.length}\n`)
  await engine.stop()
} else if (mode === 'idle') {
  await engine.start(nap, undefined, { runId: 'napping' })
  process.stdout.write('started\n')
}
