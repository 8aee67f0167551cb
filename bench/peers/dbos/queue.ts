// The peer of the flow bench (bench/flow.ts): DBOS Transact's queue with the same concurrency
// limit as Skein's `flow.concurrency`, the same 3-step workflow (three `DBOS.runStep`s), on the
// same Postgres, as DBOS's docs write it: a queue registered with `globalConcurrency`, each
// run `DBOS.startWorkflow(workflow, { queueName })` and awaited with `getResult()`, `width`
// callers at a time. Run in a child process (DBOS is a process-wide singleton):
//   node --import tsx bench/peers/dbos/queue.ts <url> <schema> <runs> <width> <limit> <pollMs>
// `pollMs`: the queue's `minPollingIntervalMs` (0: DBOS's default, 1 s). Prints one JSON line:
// { rate: runs/s, p50: ms, p99: ms }.
import { DBOS } from '@dbos-inc/dbos-sdk'

const [url, schema, runsText, widthText, limitText, pollText] = process.argv.slice(2)
const [runs, width, limit, pollMs] = [runsText, widthText, limitText, pollText].map(Number)

const step = async (x: { i: number }) => x
const three = DBOS.registerWorkflow(
  async () => {
    for (let i = 0; i < 3; i++) await DBOS.runStep(() => step({ i }), { name: `s${i}` })
    return 3
  },
  { name: 'three' },
)

DBOS.setConfig({
  name: 'skein-bench-peer',
  systemDatabaseUrl: url,
  systemDatabaseSchemaName: schema,
  logLevel: 'error',
})
await DBOS.launch()
await DBOS.registerQueue('limited', {
  globalConcurrency: limit,
  ...(pollMs > 0 ? { minPollingIntervalMs: pollMs } : {}),
})

async function round(n: number): Promise<{ rate: number; times: number[] }> {
  let next = 0
  const times: number[] = []
  const t0 = performance.now()
  await Promise.all(
    Array.from({ length: width }, async () => {
      while (next < n) {
        next++
        const started = performance.now()
        const handle = await DBOS.startWorkflow(three, { queueName: 'limited' })()
        if ((await handle.getResult()) !== 3)
          throw new Error('the workflow returned the wrong value')
        times.push(performance.now() - started)
      }
    }),
  )
  return { rate: n / ((performance.now() - t0) / 1000), times }
}

const at = (values: number[], p: number) =>
  [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.floor(p * values.length))]

await round(Math.min(32, runs)) // warm-up
const { rate, times } = await round(runs)
await DBOS.shutdown()
process.stdout.write(`${JSON.stringify({ rate, p50: at(times, 0.5), p99: at(times, 0.99) })}\n`)
