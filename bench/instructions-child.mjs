// The measured process of bench/instructions-ab.ts, plain JavaScript: run under valgrind
// without a TypeScript loader, whose thread would add its own instructions to the count.
// Warms one build of Skein up, then counts `runs` runs (`callgrind_control -i on … off`).
//   valgrind --tool=callgrind --instr-atstart=no node bench/instructions-child.mjs <dist> <kind> <runs> <warm-up runs>
import { execFileSync } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { pathToFileURL } from 'node:url'

const [distArg, kind, runsArg, warmArg] = process.argv.slice(2)
const at = (file) => pathToFileURL(join(resolve(distArg), file)).href
const skein = await import(at('index.js'))
const { sqliteStore } = await import(at('stores/sqlite/index.js'))
const { defineWorkflow, workflow } = await import(at('modules/workflow/index.js'))

// The shapes of bench/peers/skein-shapes.ts.
const step = (i) => (ctx) => ctx.invoke('bench.step', { i })
const nodes = {}
if (kind === 'fan') {
  nodes.first = { run: step(0) }
  for (let i = 0; i < 16; i++) nodes[`p${i}`] = { after: ['first'], run: step(i) }
  nodes.join = { after: Array.from({ length: 16 }, (_, i) => `p${i}`), run: step(17) }
} else {
  const n = kind === 'ten' ? 10 : 3
  for (let i = 0; i < n; i++) nodes[`s${i}`] = { after: i === 0 ? [] : [`s${i - 1}`], run: step(i) }
}
const bench = skein.defineModule({
  namespace: 'bench',
  effects: { step: skein.defineEffect({ execute: async (input) => input }) },
})
const def = defineWorkflow({ name: kind, concurrency: kind === 'fan' ? 16 : undefined, nodes })
const dir = mkdtempSync('/dev/shm/skein-instructions-')
const store = sqliteStore({ path: join(dir, 'runs.db') })
const engine = skein.createEngine({ store, modules: [workflow({ definitions: [def] }), bench] })
await engine.ready()
const inFlight = kind === 'three' ? 16 : 1
const many = async (n) => {
  let left = n
  await Promise.all(
    Array.from({ length: inFlight }, async () => {
      while (left-- > 0) {
        const { state } = await engine.start(def)
        if (state.status !== 'completed') throw new Error(`run ended ${state.status}`)
      }
    }),
  )
}
await many(Number(warmArg))
execFileSync('callgrind_control', ['-i', 'on', String(process.pid)])
await many(Number(runsArg))
execFileSync('callgrind_control', ['-i', 'off', String(process.pid)])
await engine.stop()
await store.close()
rmSync(dir, { recursive: true, force: true })
