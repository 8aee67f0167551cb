// Skein's side of `npm run bench -- peers`: the workloads of bench/peers/harness.ts as Skein
// workflows (docs/workflows.md): each step is a node that invokes an in-process effect, parallel
// steps are nodes with the same `after`, a wait is `ctx.waitFor`, a sleep `ctx.sleep`.
// SKEIN_PEER_STORE=sqlite (SKEIN_PEER_PATH: the file, synchronous FULL, the default) or
// postgres (SKEIN_PG_URL, SKEIN_PEER_SCHEMA; synchronous_commit on, the server's default).
// The Postgres store and pg are imported only when used, as an application on SQLite would
// not load them: the recovery figure counts the restarted process's imports.
import type { Client } from 'pg'
import { createEngine, defineEffect, defineModule } from 'skein'
import { sqliteStore } from 'skein/sqlite'
import { defineWorkflow, workflow } from 'skein/workflow'
import { Counter, Marks, ownConnectionPorts, type PeerSystem, runPeer } from './harness.js'
import { chainNodes, fanNodes } from './skein-shapes.js'

const marks = new Marks()
const gated = new Counter()
const finished = new Counter()
const late: number[] = []
const gateOpen = process.env.SKEIN_PEER_MODE === 'recovered'

const bench = defineModule({
  namespace: 'bench',
  effects: {
    step: defineEffect({ execute: async (input: { i: number }) => input }),
    now: defineEffect({ execute: async () => Date.now() }),
    mark: defineEffect({
      execute: async (input: { key: string }) => {
        marks.hit(input.key)
        return null
      },
    }),
    late: defineEffect({
      execute: async (input: { from: number }) => {
        late.push(Date.now() - input.from - 1000)
        return null
      },
    }),
    // The recovery workload's first step: never returns in the process that gets killed.
    gate: defineEffect({
      execute: async () => {
        gated.add()
        if (!gateOpen) await new Promise(() => {})
        return null
      },
    }),
    done: defineEffect({
      execute: async () => {
        finished.add()
        return null
      },
    }),
  },
})

const chain = (name: string, n: number) => defineWorkflow({ name, nodes: chainNodes(n) })
const three = chain('three', 3)
const ten = chain('ten', 10)
const fan = defineWorkflow({ name: 'fan', concurrency: 16, nodes: fanNodes() })
const signalled = defineWorkflow({
  name: 'signalled',
  nodes: {
    wait: { run: (ctx) => ctx.waitFor('app.go') },
    after: { after: ['wait'], run: (ctx) => ctx.invoke('bench.mark', { key: ctx.runId }) },
  },
})
const nap = defineWorkflow({
  name: 'nap',
  nodes: {
    from: { run: (ctx) => ctx.invoke('bench.now', {}) },
    sleep: { after: ['from'], run: (ctx) => ctx.sleep(1000) },
    late: {
      after: ['sleep'],
      run: (ctx) => ctx.invoke('bench.late', { from: ctx.results.from as number }),
    },
  },
})
const stuck = defineWorkflow({
  name: 'stuck',
  nodes: {
    gate: { run: (ctx) => ctx.invoke('bench.gate', {}) },
    done: { after: ['gate'], run: (ctx) => ctx.invoke('bench.done', {}) },
  },
})

async function make(): Promise<PeerSystem> {
  const kind = process.env.SKEIN_PEER_STORE ?? 'sqlite'
  const url = process.env.SKEIN_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test'
  const schema = process.env.SKEIN_PEER_SCHEMA ?? 'bench_peer_skein'
  const path = process.env.SKEIN_PEER_PATH ?? 'bench-peer.db'
  const store =
    kind === 'postgres'
      ? (await import('skein/postgres')).postgresStore({ connectionString: url }, { schema })
      : sqliteStore({ path })
  const engine = createEngine({
    store,
    modules: [workflow({ definitions: [three, ten, fan, signalled, nap, stuck] }), bench],
  })
  await engine.ready()
  let admin: Client | undefined
  if (kind === 'postgres') {
    admin = new (await import('pg')).default.Client({ connectionString: url })
    await admin.connect()
  }
  // Store bytes, read apart from the engine's connection (round mode only).
  const sizer =
    kind === 'sqlite' && (process.env.SKEIN_PEER_MODE ?? 'round') === 'round'
      ? new (await import('better-sqlite3')).default(path, { readonly: true })
      : undefined
  const completed = async (run: Promise<{ state: { status: string } }>) => {
    const { state } = await run
    if (state.status !== 'completed') throw new Error(`run ended ${state.status}`)
  }
  return {
    threeSteps: () => completed(engine.start(three)),
    tenSteps: () => completed(engine.start(ten)),
    fanOut: () => completed(engine.start(fan)),
    async parkForSignal() {
      // `start` resolves once the run is parked on its wait.
      const { runId } = await engine.start(signalled)
      return async () => {
        const ran = marks.wait(runId)
        void engine.signal(runId, [{ type: 'app.go', payload: {} }])
        await ran
      }
    },
    async sleepers(n) {
      for (let i = 0; i < n; i += 50) {
        await Promise.all(Array.from({ length: Math.min(50, n - i) }, () => engine.start(nap)))
      }
      while (late.length < n) await new Promise((resolve) => setTimeout(resolve, 5))
      return late
    },
    async stuck(n) {
      for (let i = 0; i < n; i += 50) {
        await Promise.all(Array.from({ length: Math.min(50, n - i) }, () => engine.start(stuck)))
      }
      await gated.reached(n)
    },
    recovered: (n) => finished.reached(n),
    async storeBytes() {
      if (sizer) {
        const row = sizer
          .prepare(
            'SELECT page_count * page_size AS bytes FROM pragma_page_count, pragma_page_size',
          )
          .get() as { bytes: number }
        return row.bytes
      }
      const { rows } = await admin!.query(
        `SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0)::bigint AS bytes
           FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
          WHERE n.nspname = $1 AND c.relkind IN ('r', 'm')`,
        [schema],
      )
      return Number(rows[0].bytes)
    },
    async serverPids() {
      if (!admin) return []
      const { rows } = await admin.query(
        'SELECT pid FROM pg_stat_activity WHERE client_port = ANY($1) AND pid <> pg_backend_pid()',
        [ownConnectionPorts(Number(new URL(url).port || 5432))],
      )
      return rows.map((r) => r.pid)
    },
    async close() {
      sizer?.close()
      await admin?.end()
      await engine.stop()
      await store.close()
    },
  }
}

await runPeer(make)
