// Where the host's CPU per run goes at 16 in flight on Postgres: the 3-step workflow on
// postgresStore (`pg`, one connection) three ways in alternating rounds of one process, with
// `skein_append` calls (every statement in this loop but timer-driven reads) answered
//   - by the database (as bench/postgres-engine.ts),
//   - in-process from `setImmediate` with no rows (every request committed; no database, no wait),
//   - in-process after a 1 ms timer (a wait like a commit's, no database).
// The engine and the store's own code run the same in all three; the driver runs only in the
// first. Prints this process's CPU ms per run (medians, each way), the backend's for the first,
// and the load average. Run on the built package (`npm run -s build`):
//   node --expose-gc --import tsx bench/postgres-host-split.ts [rounds] [runs]
import { readFileSync } from 'node:fs'
import { createEngine } from 'skein'
import { type PostgresQueryable, postgresStore } from 'skein/postgres'
import { workflow } from 'skein/workflow'
import { freshSchema, rawClient } from './postgres-floor.js'
import { median } from './table.js'
import { benchEffects, three } from './three-steps.js'

const PG_URL = process.env.SKEIN_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test'
const [ROUNDS, RUNS] = [5, 3200].map((d, i) => Number(process.argv[2 + i] ?? d))
const CONCURRENCY = 16
const SCHEMA = `bench_split_${process.pid}`
type Way = 'database' | 'immediate' | 'timer'

/** A backend's time on CPU so far, ms (schedstat: nanoseconds; the server is local). */
const backendMs = (pid: number) =>
  Number(readFileSync(`/proc/${pid}/schedstat`, 'utf8').split(' ')[0]) / 1e6

async function round(way: Way, runs: number) {
  const client = rawClient('pg', PG_URL)
  await freshSchema(client, SCHEMA)
  let live = false
  const pool: PostgresQueryable = {
    query(text, params) {
      if (live && way !== 'database' && text.startsWith('SELECT o_req')) {
        return new Promise((resolve) => {
          if (way === 'timer') setTimeout(() => resolve({ rows: [] }), 1)
          else setImmediate(() => resolve({ rows: [] }))
        })
      }
      return client.query(text, params)
    },
  }
  const store = postgresStore({ pool }, { schema: SCHEMA })
  const engine = createEngine({
    store,
    modules: [workflow({ definitions: [three] }), benchEffects],
  })
  await engine.ready()
  live = true
  const { rows } = await client.query('SELECT pg_backend_pid() AS pid', [])
  const pid = Number(rows[0].pid)
  const loop = async (n: number) => {
    let next = 0
    await Promise.all(
      Array.from({ length: CONCURRENCY }, async () => {
        while (next < n) {
          next++
          const { state } = await engine.start(three)
          if (state.status !== 'completed') throw new Error(`3-step run ended ${state.status}`)
        }
      }),
    )
  }
  await loop(400)
  const b0 = backendMs(pid)
  const cpu0 = process.cpuUsage()
  await loop(runs)
  const cpu = process.cpuUsage(cpu0)
  const backend = (backendMs(pid) - b0) / runs
  await engine.stop()
  await store.close()
  await client.query(`DROP SCHEMA "${SCHEMA}" CASCADE`)
  await client.end()
  return { host: (cpu.user + cpu.system) / 1000 / runs, backend }
}

const load = () => readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ')
const host: Record<Way, number[]> = { database: [], immediate: [], timer: [] }
const backend: number[] = []
console.log(`load ${load()}`)
for (let r = 0; r < ROUNDS; r++) {
  const ways: Way[] = ['database', 'immediate', 'timer']
  for (const way of r % 2 === 0 ? ways : ways.reverse()) {
    const figures = await round(way, RUNS)
    host[way].push(figures.host)
    if (way === 'database') backend.push(figures.backend)
  }
  console.log(
    `round ${r + 1}: host ms per run: database ${host.database[r].toFixed(3)}, immediate ${host.immediate[r].toFixed(3)}, 1 ms timer ${host.timer[r].toFixed(3)}; backend ${backend[r].toFixed(3)}; load ${load()}`,
  )
}
console.log(
  `medians: host CPU ms per run: database ${median(host.database).toFixed(3)}, immediate ${median(host.immediate).toFixed(3)}, 1 ms timer ${median(host.timer).toFixed(3)}; backend ${median(backend).toFixed(3)}; load ${load()}`,
)
