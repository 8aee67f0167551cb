// A process for takeover.test.ts, spawned with `--conditions=skein-source --import tsx`.
// `first <db> <marks>`: starts run `r` whose effect records "<pid> <ms>" in `marks` and then
// never finishes here; stays until SIGKILLed. `standby <db> <marks>`: an engine on the same file
// that does nothing but its background claims, prints "ready"; its attempt of the effect records
// its mark too and completes. `call <db> <marks>`: as standby, then wakes `r` once the first
// process is gone (a call for the run, not the claim poll).
import { appendFileSync } from 'node:fs'
import { createEngine, defineEffect, defineModule } from 'skein'
import { sqliteStore } from 'skein/sqlite'
import { defineWorkflow, workflow } from 'skein/workflow'

const [mode, db, marks] = process.argv.slice(2) as [string, string, string]

const effects = defineModule({
  namespace: 'to',
  effects: {
    step: defineEffect<null, string>({
      execute: () => {
        appendFileSync(marks, `${process.pid} ${Date.now()}\n`)
        return mode === 'first' ? new Promise<string>(() => {}) : 'done'
      },
    }),
  },
})
const flow = defineWorkflow({
  name: 'flow',
  nodes: { step: { run: (ctx) => ctx.invoke('to.step') } },
})
const engine = createEngine({
  store: sqliteStore({ path: db }),
  modules: [workflow({ definitions: [flow] }), effects],
})

if (mode === 'first') {
  await engine.start(flow, undefined, { runId: 'r' })
} else {
  await engine.ready()
  process.stdout.write('ready\n')
  if (mode === 'call') {
    process.stdin.once('data', () => {
      void engine.wake('r').then(() => process.stdout.write('woken\n'))
    })
  }
}
process.stdin.resume()
