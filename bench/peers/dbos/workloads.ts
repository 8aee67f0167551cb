// DBOS Transact 5.3's side of `npm run bench -- peers`: the workloads of bench/peers/harness.ts
// written the way DBOS's TypeScript docs write them: workflows registered with
// `DBOS.registerWorkflow`, each step a `DBOS.runStep`, parallel steps started in a fixed order
// and awaited with `Promise.allSettled`, a signal `DBOS.send` / `DBOS.recv`, a sleep `DBOS.sleep`,
// recovery by `DBOS.launch()` in the restarted process. Postgres at SKEIN_PG_URL
// (synchronous_commit on, the server's default), system tables in SKEIN_PEER_SCHEMA.
import { DBOS } from '@dbos-inc/dbos-sdk'
import pg from 'pg'
import { Counter, Marks, ownConnectionPorts, type PeerSystem, runPeer } from '../harness.js'

const url = process.env.SKEIN_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test'
const schema = process.env.SKEIN_PEER_SCHEMA ?? 'bench_peer_dbos'
const marks = new Marks()
const gated = new Counter()
const finished = new Counter()
const late: number[] = []
const gateOpen = process.env.SKEIN_PEER_MODE === 'recovered'

const step = async (i: number) => ({ i })

async function chainOf(n: number): Promise<number> {
  for (let i = 0; i < n; i++) await DBOS.runStep(() => step(i), { name: `s${i}` })
  return n
}
const three = DBOS.registerWorkflow(() => chainOf(3), { name: 'three' })
const ten = DBOS.registerWorkflow(() => chainOf(10), { name: 'ten' })
const fan = DBOS.registerWorkflow(
  async () => {
    await DBOS.runStep(() => step(0), { name: 'first' })
    const results = await Promise.allSettled(
      Array.from({ length: 16 }, (_, i) => DBOS.runStep(() => step(i), { name: `p${i}` })),
    )
    if (results.some((r) => r.status === 'rejected')) throw new Error('a parallel step failed')
    await DBOS.runStep(() => step(17), { name: 'join' })
    return 18
  },
  { name: 'fan' },
)
const signalled = DBOS.registerWorkflow(
  async (key: string) => {
    await DBOS.runStep(async () => marks.hit(`ready-${key}`), { name: 'ready' })
    const go = await DBOS.recv<string>('go', 60)
    if (go === null) throw new Error('no signal within 60 s')
    await DBOS.runStep(async () => marks.hit(key), { name: 'after' })
  },
  { name: 'signalled' },
)
const nap = DBOS.registerWorkflow(
  async () => {
    const from = await DBOS.runStep(async () => Date.now(), { name: 'from' })
    await DBOS.sleep(1000)
    await DBOS.runStep(async () => late.push(Date.now() - from - 1000), { name: 'late' })
  },
  { name: 'nap' },
)
const stuck = DBOS.registerWorkflow(
  async () => {
    await DBOS.runStep(
      async () => {
        gated.add()
        if (!gateOpen) await new Promise(() => {})
      },
      { name: 'gate' },
    )
    await DBOS.runStep(async () => finished.add(), { name: 'done' })
  },
  { name: 'stuck' },
)

async function make(): Promise<PeerSystem> {
  DBOS.setConfig({
    name: 'skein-bench-peer',
    systemDatabaseUrl: url,
    systemDatabaseSchemaName: schema,
    logLevel: 'error',
  })
  // In the restarted process `launch` recovers the workflows the killed one left pending.
  await DBOS.launch()
  const admin = new pg.Client({ connectionString: url })
  await admin.connect()
  const completed = async (run: Promise<number>) => {
    if (typeof (await run) !== 'number') throw new Error('workflow returned the wrong value')
  }
  const startAll = async (n: number, start: () => Promise<unknown>) => {
    for (let i = 0; i < n; i += 50) {
      await Promise.all(Array.from({ length: Math.min(50, n - i) }, start))
    }
  }
  return {
    threeSteps: () => completed(three()),
    tenSteps: () => completed(ten()),
    fanOut: () => completed(fan()),
    async parkForSignal(key) {
      await DBOS.startWorkflow(signalled, { workflowID: key })(key)
      await marks.wait(`ready-${key}`)
      return async () => {
        const ran = marks.wait(key)
        await DBOS.send(key, 'go', 'go')
        await ran
      }
    },
    async sleepers(n) {
      await startAll(n, () => DBOS.startWorkflow(nap)())
      while (late.length < n) await new Promise((resolve) => setTimeout(resolve, 5))
      return late
    },
    async stuck(n) {
      await startAll(n, () => DBOS.startWorkflow(stuck)())
      await gated.reached(n)
    },
    recovered: (n) => finished.reached(n),
    async storeBytes() {
      const { rows } = await admin.query(
        `SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0)::bigint AS bytes
           FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
          WHERE n.nspname = $1 AND c.relkind IN ('r', 'm')`,
        [schema],
      )
      return Number(rows[0].bytes)
    },
    async serverPids() {
      const { rows } = await admin.query(
        'SELECT pid FROM pg_stat_activity WHERE client_port = ANY($1) AND pid <> pg_backend_pid()',
        [ownConnectionPorts(Number(new URL(url).port || 5432))],
      )
      return rows.map((r) => r.pid)
    },
    async close() {
      await admin.end()
      await DBOS.shutdown()
    },
  }
}

await runPeer(make)
