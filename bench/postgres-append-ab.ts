// Migration 17's set-based `skein_append` against migration 5's per-request loop, in one process:
// the 3-step workflow 16 at a time on two schemas (the old function restored in one of them by
// renaming `skein_append_each` back), with the raw `pg` loop in every round; the order of the
// two alternates by round. Prints each round and the medians, the paired after ÷ before ratio
// and the load average. Run directly, on the built package:
//   node --import tsx bench/postgres-append-ab.ts [rounds] [runs] [concurrency]
import { readFileSync } from 'node:fs'
import { createEngine } from 'skein'
import { postgresStore } from 'skein/postgres'
import { workflow } from 'skein/workflow'
import { floorRuns, freshSchema, rawClient } from './postgres-floor.js'
import { median } from './table.js'
import { benchEffects, three } from './three-steps.js'

const PG_URL = process.env.SKEIN_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test'
const [ROUNDS, RUNS, CONCURRENCY] = [5, 1600, 16].map((d, i) => Number(process.argv[2 + i] ?? d))
const APPEND_ARGS = `text[], bigint[], text[], integer[], text[], text[], text[], text[], bigint[],
  bigint[], bigint[], text[], bigint[], bigint[], bigint[], json, text[], bigint[], bigint[],
  integer[], text[], boolean, boolean`

type Side = 'before' | 'after'

/** CPU time (user + system, ms) of a Postgres backend so far, from /proc (the server is local). */
function backendCpuMs(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ')
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100
}

/**
 * runs/s, this process's CPU ms per run and the backend's (the client has one connection, so
 * one backend serves every statement) of the 3-step workflow on `side`'s function.
 */
async function skeinRuns(side: Side, runs: number) {
  const client = rawClient('pg', PG_URL)
  const schema = `bench_ab_${side}`
  await freshSchema(client, schema)
  if (side === 'before') {
    await client.query(`DROP FUNCTION ${schema}.skein_append(${APPEND_ARGS})`)
    await client.query(`ALTER FUNCTION ${schema}.skein_append_each RENAME TO skein_append`)
  }
  const store = postgresStore({ pool: client }, { schema })
  const engine = createEngine({
    store,
    modules: [workflow({ definitions: [three] }), benchEffects],
  })
  await engine.ready()
  const { rows } = await client.query('SELECT pg_backend_pid() AS pid')
  const backend0 = backendCpuMs(rows[0].pid)
  let next = 0
  const t0 = performance.now()
  const cpu0 = process.cpuUsage()
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next < runs) {
        next++
        const { state } = await engine.start(three)
        if (state.status !== 'completed') throw new Error(`3-step run ended ${state.status}`)
      }
    }),
  )
  const rate = runs / ((performance.now() - t0) / 1000)
  const cpu = process.cpuUsage(cpu0)
  const backendMs = (backendCpuMs(rows[0].pid) - backend0) / runs
  await engine.stop()
  await store.close()
  await client.query(`DROP SCHEMA ${schema} CASCADE`)
  await client.end()
  return { rate, cpuMs: (cpu.user + cpu.system) / 1000 / runs, backendMs }
}

async function floor(runs: number): Promise<number> {
  const client = rawClient('pg', PG_URL)
  await freshSchema(client, 'bench_ab_floor')
  const rate = await floorRuns(client, 'bench_ab_floor', runs, CONCURRENCY)
  await client.query('DROP SCHEMA bench_ab_floor CASCADE')
  await client.end()
  return rate
}

const load = () => readFileSync('/proc/loadavg', 'utf8').split(' ')[0]
await floor(300)
await skeinRuns('before', 400)
await skeinRuns('after', 400)
const rates = { floor: [] as number[], before: [] as number[], after: [] as number[] }
const cpu = { before: [] as number[], after: [] as number[] }
const backend = { before: [] as number[], after: [] as number[] }
for (let round = 0; round < ROUNDS; round++) {
  rates.floor.push(await floor(RUNS))
  const order: Side[] = round % 2 === 0 ? ['before', 'after'] : ['after', 'before']
  for (const side of order) {
    const { rate, cpuMs, backendMs } = await skeinRuns(side, RUNS)
    rates[side].push(rate)
    cpu[side].push(cpuMs)
    backend[side].push(backendMs)
  }
  const [f, b, a] = [rates.floor[round], rates.before[round], rates.after[round]]
  console.log(
    `round ${round + 1}: raw loop ${f.toFixed(0)}, before ${b.toFixed(0)} (${(b / f).toFixed(2)}), after ${a.toFixed(0)} (${(a / f).toFixed(2)}), after ÷ before ${(a / b).toFixed(2)}; load ${load()}`,
  )
}
const paired = rates.after.map((a, i) => a / rates.before[i])
const m = (values: number[]) => median(values)
console.log(
  `medians: raw loop ${m(rates.floor).toFixed(0)}, before ${m(rates.before).toFixed(0)} (${(m(rates.before) / m(rates.floor)).toFixed(2)}), after ${m(rates.after).toFixed(0)} (${(m(rates.after) / m(rates.floor)).toFixed(2)}) runs/s; paired after ÷ before ${m(paired).toFixed(2)} (${Math.min(...paired).toFixed(2)}–${Math.max(...paired).toFixed(2)}); CPU ms per run, this process: before ${m(cpu.before).toFixed(3)}, after ${m(cpu.after).toFixed(3)}; the backend: before ${m(backend.before).toFixed(3)}, after ${m(backend.after).toFixed(3)} (paired after ÷ before ${m(backend.after.map((a, i) => a / backend.before[i])).toFixed(2)})`,
)
