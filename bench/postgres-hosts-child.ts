// One host of the many-hosts bench (postgres-hosts.ts): an engine on a shared Postgres schema
// running the 3-step workflow. argv: <url> <schema> <runs> <concurrency>. Protocol on
// stdio: prints `ready` after a warm-up; on `go` runs `runs` runs, `concurrency` at a time,
// and prints `{ runs, ms, cpuMs }`; on `exit` stops.
import { createInterface } from 'node:readline'
import { createEngine } from 'skein'
import { postgresStore } from 'skein/postgres'
import { workflow } from 'skein/workflow'
import { benchEffects, three } from './three-steps.js'

const [url, schema, runsText, concurrencyText] = process.argv.slice(2)
const store = postgresStore({ connectionString: url }, { schema, maxConnections: 4 })
// Ownership on: what several hosts on one schema need (every commit carries the lease).
const engine = createEngine({
  store,
  modules: [workflow({ definitions: [three] }), benchEffects],
  ownership: {},
})
await engine.ready()

async function batch(runs: number, concurrency: number): Promise<void> {
  let next = 0
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < runs) {
        next++
        const { state } = await engine.start(three)
        if (state.status !== 'completed') throw new Error(`3-step run ended ${state.status}`)
      }
    }),
  )
}

await batch(200, Number(concurrencyText))
process.stdout.write('ready\n')
const lines = createInterface({ input: process.stdin })
for await (const line of lines) {
  if (line === 'go') {
    const cpu0 = process.cpuUsage()
    const t0 = performance.now()
    await batch(Number(runsText), Number(concurrencyText))
    const ms = performance.now() - t0
    const cpu = process.cpuUsage(cpu0)
    process.stdout.write(
      `${JSON.stringify({ runs: Number(runsText), ms, cpuMs: (cpu.user + cpu.system) / 1000 })}\n`,
    )
  } else if (line === 'exit') break
}
await engine.stop()
await store.close()
process.exit(0)
