// The peer: DBOS Transact running the same 3-step workflow as Skein's Postgres benchmark (three
// steps in a chain, each returning its input), on the same database, in a schema of its own.
// Run by bench/postgres-engine.ts in a child process (DBOS is a process-wide singleton):
//   node --import tsx bench/peers/dbos/three-steps.ts <url> <schema> <rounds> <seqRuns> <parRuns> <concurrency>
// Prints one JSON line: { seq: runs/s[], par: runs/s[], p50: ms }.
import { DBOS } from '@dbos-inc/dbos-sdk'

const [url, schema, roundsText, seqText, parText, concurrencyText] = process.argv.slice(2)
const [rounds, seqRuns, parRuns, concurrency] = [roundsText, seqText, parText, concurrencyText].map(
  Number,
)

const step = async (x: { i: number }) => x
async function threeSteps(): Promise<number> {
  for (let i = 0; i < 3; i++) await DBOS.runStep(() => step({ i }), { name: `s${i}` })
  return 3
}
const workflow = DBOS.registerWorkflow(threeSteps, { name: 'three' })

DBOS.setConfig({
  name: 'skein-bench-peer',
  systemDatabaseUrl: url,
  systemDatabaseSchemaName: schema,
  logLevel: 'error',
})
await DBOS.launch()

/** `runs` workflows, `width` at a time; returns runs/s and each run's latency (ms). */
async function round(runs: number, width: number): Promise<{ rate: number; times: number[] }> {
  let next = 0
  const times: number[] = []
  const t0 = performance.now()
  await Promise.all(
    Array.from({ length: width }, async () => {
      while (next < runs) {
        next++
        const started = performance.now()
        if ((await workflow()) !== 3) throw new Error('3-step workflow returned the wrong value')
        times.push(performance.now() - started)
      }
    }),
  )
  return { rate: runs / ((performance.now() - t0) / 1000), times }
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[values.length >> 1]

await round(100, concurrency) // warm-up
const seq: number[] = []
const par: number[] = []
const latencies: number[] = []
for (let r = 0; r < rounds; r++) {
  const one = await round(seqRuns, 1)
  seq.push(one.rate)
  latencies.push(...one.times)
  par.push((await round(parRuns, concurrency)).rate)
}
await DBOS.shutdown()
process.stdout.write(`${JSON.stringify({ seq, par, p50: median(latencies) })}\n`)
