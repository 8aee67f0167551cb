// The actor host: default cells (one SQLite file per run, synchronous=FULL) against
// the embed host on one SQLite file (FULL), both over HTTP on 127.0.0.1; cold cell opens; a warm
// cell's GET /runs/:id against the embed host's; the same rate and cold opens on cells over one
// shared SQLite file (sharedCells). SKEIN_BENCH_ACTOR_RUNS=100000 adds the large
// creation figure (RSS and fds with at most 256 open cells).
import { mkdtempSync, readdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createEngine } from 'skein'
import { createActorHost, sharedCells, sqliteCells } from 'skein/actor'
import { sqliteStore } from 'skein/sqlite'
import { defineWorkflow, workflow } from 'skein/workflow'
import { load } from './http.js'
import { median, percentile, type Row } from './table.js'

const ROUNDS = 3
const RUNS_PER_ROUND = 320
const CONCURRENCY = 16

const three = defineWorkflow({
  name: 'bench-three',
  nodes: {
    a: { run: () => ({ a: 1 }) },
    b: { after: ['a'], run: () => ({ b: 2 }) },
    c: { after: ['b'], run: () => ({ c: 3 }) },
  },
})
const modules = () => [workflow({ definitions: [three] })]

interface Served {
  url: string
  stop(): Promise<void>
}

async function startRuns(url: string, prefix: string, count: number): Promise<number> {
  let next = 0
  const t0 = performance.now()
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next < count) {
        const i = next++
        const res = await fetch(`${url}/runs`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({
            kind: 'workflow',
            definitionName: 'bench-three',
            runId: `${prefix}-${i}`,
          }),
        })
        const body = (await res.json()) as { state?: { status?: string } }
        if (body.state?.status !== 'completed') throw new Error(`run ${i}: ${JSON.stringify(body)}`)
      }
    }),
  )
  return (count / (performance.now() - t0)) * 1000
}

async function embedHost(dir: string): Promise<Served> {
  const store = sqliteStore({ path: join(dir, 'embed.db') })
  const engine = createEngine({ store, modules: modules() })
  const server = await engine.serve({ port: 0 })
  return {
    url: server.url,
    stop: async () => {
      await engine.stop()
      await store.close()
    },
  }
}

async function actorHost(dir: string, maxOpenCells = 256): Promise<Served & { host: any }> {
  const host = createActorHost({ modules: modules(), dir, maxOpenCells })
  const server = await host.serve({ port: 0 })
  return { url: server.url, host, stop: () => host.stop() }
}

/** An actor host whose cells share one SQLite file (the single writer from its leases). */
async function sharedActorHost(dir: string, maxOpenCells = 256): Promise<Served & { host: any }> {
  const store = sqliteStore({ path: join(dir, 'shared.db') })
  const host = createActorHost({ modules: modules(), cells: sharedCells({ store }), maxOpenCells })
  const server = await host.serve({ port: 0 })
  return {
    url: server.url,
    host,
    stop: async () => {
      await host.stop()
      await store.close()
    },
  }
}

export async function benchActor(): Promise<Row[]> {
  const rows: Row[] = []
  const root = mkdtempSync(join(tmpdir(), 'skein-bench-actor-'))
  try {
    // 1. Three-step workflow, 16 concurrent starts over HTTP, paired rounds.
    const actorRates: number[] = []
    const embedRates: number[] = []
    const sharedRates: number[] = []
    for (let round = 0; round < ROUNDS; round++) {
      const dir = mkdtempSync(join(root, 'pair-'))
      const embed = await embedHost(dir)
      embedRates.push(await startRuns(embed.url, `e${round}`, RUNS_PER_ROUND))
      await embed.stop()
      const actor = await actorHost(join(dir, 'actor'))
      actorRates.push(await startRuns(actor.url, `a${round}`, RUNS_PER_ROUND))
      await actor.stop()
      const shared = await sharedActorHost(dir)
      sharedRates.push(await startRuns(shared.url, `s${round}`, RUNS_PER_ROUND))
      await shared.stop()
    }
    const sharedRate = median(sharedRates)
    const embedRate = median(embedRates)
    const actorRate = median(actorRates)
    rows.push({
      name: '3-step workflow, 16 concurrent, embed host, one SQLite file',
      value: embedRate,
      unit: 'runs/s',
    })
    rows.push({
      name: '3-step workflow, 16 concurrent, actor host, one SQLite file per run',
      value: actorRate,
      unit: 'runs/s',
      baseline: embedRate,
      ratio: actorRate / embedRate,
    })
    rows.push({
      name: '3-step workflow, 16 concurrent, actor host, cells on one shared SQLite file',
      value: sharedRate,
      unit: 'runs/s',
      baseline: embedRate,
      ratio: sharedRate / embedRate,
    })

    // 2. Cold cell opens: a GET of a run whose cell is closed. First on a fresh host over 400
    //    closed cells (nothing to evict), then with 8 cells at most (each open evicts one).
    const coldDir = join(root, 'cold')
    const seed = await actorHost(coldDir)
    await startRuns(seed.url, 'c', 400)
    await seed.stop()
    const order = Array.from({ length: 400 }, (_, i) => `c-${(i * 157) % 400}`)
    const timeGets = async (host: any, runIds: string[]) => {
      const ms: number[] = []
      for (const runId of runIds) {
        const t0 = performance.now()
        const res = await host.fetch(new Request(`http://bench/runs/${runId}`))
        await res.text()
        ms.push(performance.now() - t0)
      }
      return ms
    }
    const fresh = await actorHost(coldDir, 1000)
    const coldMs = await timeGets(fresh.host, order)
    const warmMs = await timeGets(fresh.host, Array(400).fill('c-0'))
    await fresh.stop()
    const small = await actorHost(coldDir, 8)
    const evictingMs = await timeGets(small.host, order)
    await small.stop()
    // The same on cells over one shared SQLite file: a cold open is a tail read and a fold.
    const sharedDir = mkdtempSync(join(root, 'cold-shared-'))
    const sharedSeed = await sharedActorHost(sharedDir)
    await startRuns(sharedSeed.url, 'c', 400)
    await sharedSeed.stop()
    const sharedFresh = await sharedActorHost(sharedDir, 1000)
    const sharedColdMs = await timeGets(sharedFresh.host, order)
    await sharedFresh.stop()
    const warmP50 = percentile(warmMs, 50)
    rows.push({
      name: 'cold cell open + GET /runs/:id, p50',
      value: percentile(coldMs, 50),
      unit: 'ms',
      baseline: warmP50,
      ratio: percentile(coldMs, 50) / warmP50,
      note: 'baseline: warm GET',
    })
    rows.push({
      name: 'cold cell open + GET /runs/:id, p99',
      value: percentile(coldMs, 99),
      unit: 'ms',
    })
    rows.push({
      name: 'cold cell open + GET /runs/:id, cells on one shared SQLite file, p50',
      value: percentile(sharedColdMs, 50),
      unit: 'ms',
    })
    rows.push({
      name: 'cold cell open + GET /runs/:id, cells on one shared SQLite file, p99',
      value: percentile(sharedColdMs, 99),
      unit: 'ms',
    })
    rows.push({
      name: 'cold open evicting the LRU cell (8 open at most), p50',
      value: percentile(evictingMs, 50),
      unit: 'ms',
    })
    rows.push({
      name: 'cold open evicting the LRU cell (8 open at most), p99',
      value: percentile(evictingMs, 99),
      unit: 'ms',
    })

    // 3. A warm cell's GET /runs/:id against the embed host's, load from a child process.
    const warmDir = mkdtempSync(join(root, 'warm-'))
    const embed = await embedHost(warmDir)
    await startRuns(embed.url, 'w', 1)
    const embedGets = median([
      await load(`${embed.url}/runs/w-0`),
      await load(`${embed.url}/runs/w-0`),
    ])
    await embed.stop()
    const actor = await actorHost(join(warmDir, 'actor'))
    await startRuns(actor.url, 'w', 1)
    const actorGets = median([
      await load(`${actor.url}/runs/w-0`),
      await load(`${actor.url}/runs/w-0`),
    ])
    await actor.stop()
    rows.push({ name: 'GET /runs/:id, embed host', value: embedGets, unit: 'req/s' })
    rows.push({
      name: 'GET /runs/:id, actor host, warm cell',
      value: actorGets,
      unit: 'req/s',
      baseline: embedGets,
      ratio: actorGets / embedGets,
    })

    // 4. Optional: many runs through at most 256 open cells.
    const many = Number(process.env.SKEIN_BENCH_ACTOR_RUNS ?? 0)
    if (many > 0) rows.push(...(await manyRuns(join(root, 'many'), many)))
  } finally {
    rmSync(root, { recursive: true, force: true })
  }
  return rows
}

/**
 * `count` runs created one after another through at most 256 open cells: runs/s, RSS (sampled
 * every 1,000 runs: the first sample past the warm-up and the highest), extra fds, and the cold
 * open of the oldest runs' cells afterwards (p50/p99). Progress on stderr.
 */
export async function manyRuns(dir: string, count: number): Promise<Row[]> {
  const host = createActorHost({
    modules: modules(),
    dir,
    cells: sqliteCells({ dir, synchronous: 'normal' }),
    maxOpenCells: 256,
  })
  const fds = () => readdirSync('/proc/self/fd').length
  const rssMb = () => process.memoryUsage().rss / 2 ** 20
  const fds0 = fds()
  let maxFds = 0
  let maxOpen = 0
  let maxRss = 0
  let warmRss = 0
  const t0 = performance.now()
  for (let i = 0; i < count; i++) {
    const res = await host.fetch(
      new Request('http://bench/runs', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ kind: 'workflow', definitionName: 'bench-three', runId: `m-${i}` }),
      }),
    )
    if (res?.status !== 200) throw new Error(`start ${i}: ${res?.status}`)
    await res.text()
    maxOpen = Math.max(maxOpen, host.openCells())
    if (i % 1000 === 999) {
      const rss = rssMb()
      if (warmRss === 0 && i >= 1000) warmRss = rss
      maxRss = Math.max(maxRss, rss)
      maxFds = Math.max(maxFds, fds() - fds0)
      if (i % 10_000 === 9999) {
        const s = (performance.now() - t0) / 1000
        process.stderr.write(
          `actor many: ${i + 1} runs in ${s.toFixed(0)} s, rss ${rss.toFixed(0)} MiB, open ${host.openCells()}, extra fds ${fds() - fds0}\n`,
        )
      }
    }
  }
  const seconds = (performance.now() - t0) / 1000
  const rss = rssMb()
  // Cold opens among `count` closed cells: a GET of runs created long ago.
  const coldMs: number[] = []
  for (let k = 0; k < 400; k++) {
    const runId = `m-${(k * 7919) % Math.max(1, count - 1000)}`
    const t1 = performance.now()
    const res = await host.fetch(new Request(`http://bench/runs/${runId}`))
    await res?.text()
    coldMs.push(performance.now() - t1)
  }
  await host.stop()
  return [
    {
      name: `${count} runs created, actor host (synchronous=normal)`,
      value: count / seconds,
      unit: 'runs/s',
    },
    {
      name: `RSS after ${count} runs, at most 256 cells open`,
      value: rss,
      unit: 'MiB',
      note: `max open ${maxOpen}; RSS after 2,000 runs ${warmRss.toFixed(0)} MiB, highest ${maxRss.toFixed(0)} MiB`,
    },
    { name: `extra fds during ${count} runs (highest)`, value: maxFds, unit: 'fds' },
    {
      name: `cold cell open + GET among ${count} runs, p50`,
      value: percentile(coldMs, 50),
      unit: 'ms',
    },
    {
      name: `cold cell open + GET among ${count} runs, p99`,
      value: percentile(coldMs, 99),
      unit: 'ms',
    },
  ]
}
