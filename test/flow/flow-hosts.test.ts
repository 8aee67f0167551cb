// Flow control over real processes on one store (flow-host-child.ts): the limits hold across
// processes, measured by the handlers themselves, through a kill -9 part-way. Real time, polled;
// the figures are printed as SCORE lines, never asserted as timings.
import { join } from 'node:path'
import type { EventStore } from 'skein'
import { describe, expect, it } from 'vitest'
import { postgresAvailable, testSchemas } from '../support/postgres.js'
import { clusterFixture, type Edge, maxInFlight, startRun, until } from './flow-hosts.js'

const fresh = clusterFixture()

/** How many of `runIds` have each status, read from the store. */
async function statusCounts(store: EventStore, runIds: string[]): Promise<Record<string, number>> {
  const wanted = new Set(runIds)
  const counts: Record<string, number> = {}
  const page = await store.listSummaries!({ limit: 1000 })
  for (const run of page.runs) {
    if (wanted.has(run.runId)) counts[run.status] = (counts[run.status] ?? 0) + 1
  }
  return counts
}

/**
 * `runs` runs of `definitionName` started over `hosts` processes, 20 at a time; once `killAfter`
 * handlers have started, one process is killed -9. Waits until every run completed; returns
 * the handlers' lines and when the kill was.
 */
async function runOverHosts(
  setup: ReturnType<typeof fresh>,
  o: {
    hosts: number
    runs: number
    definitionName: string
    keyOf: (i: number) => string
    killAfter: number
    what: Edge['what']
    hostOptions?: Record<string, unknown>
  },
) {
  const { cluster, reader } = setup
  const hosts = [await cluster.spawnHost('h0', o.hostOptions)]
  for (let i = 1; i < o.hosts; i++) hosts.push(await cluster.spawnHost(`h${i}`, o.hostOptions))
  const target = hosts[hosts.length - 1]
  const runIds = Array.from({ length: o.runs }, (_, i) => `${o.definitionName}-${i}`)
  const killed = new Map<number, number>()
  let victim: (typeof hosts)[number] | undefined
  // Killed while one of its handlers runs (a slot held), once `killAfter` handlers started.
  const killing = until('handlers to start before the kill', () => {
    const edges = cluster.edges()
    if (edges.filter((e) => e.edge === 'start').length < o.killAfter) return false
    const own = edges.filter((e) => e.pid === target.proc.pid)
    return own.length % 2 === 1
  }).then(async () => {
    victim = target
    const pid = victim.proc.pid as number
    killed.set(pid, await cluster.kill(victim))
  })
  for (let from = 0; from < o.runs; from += 20) {
    const statuses = await Promise.all(
      runIds.slice(from, from + 20).map((runId, j) =>
        startRun(hosts, from + j, {
          kind: 'workflow',
          definitionName: o.definitionName,
          runId,
          input: { key: o.keyOf(from + j) },
        }),
      ),
    )
    for (const status of statuses) expect([200, 201]).toContain(status)
  }
  await killing
  const store = reader()
  let counts: Record<string, number> = {}
  await until(
    'every run to complete',
    async () => {
      counts = await statusCounts(store, runIds)
      return counts.completed === o.runs
    },
    240_000,
  ).catch((error) => {
    throw new Error(`${(error as Error).message}: ${JSON.stringify(counts)}`)
  })
  const edges = cluster.edges().filter((e) => e.what === o.what)
  const interrupted = hosts.reduce(
    (n, h) => n + (h.output().match(/interrupted /g)?.length ?? 0),
    0,
  )
  const victimPid = victim?.proc.pid as number
  const openOnVictim = edges.filter((e) => e.pid === victimPid).length % 2
  return { edges, killed, counts, interrupted, victimPid, openOnVictim }
}

/** How many runs' handlers ended at least once (in a process that lived to see it). */
const runsEnded = (edges: Edge[]): number =>
  new Set(edges.filter((e) => e.edge === 'end').map((e) => e.runId)).size

const runLevel = (name: string, spec: (dir: string) => string, hosts: number) =>
  it(`${name}: ${hosts} processes, 300 runs over 10 keys, limit 3 per key, kill -9 part-way: at most 3 per key at every instant, every run completes`, async () => {
    const setup = fresh(spec)
    const r = await runOverHosts(setup, {
      hosts,
      runs: 300,
      definitionName: 'keyed',
      keyOf: (i) => `k${i % 10}`,
      killAfter: 90,
      what: 'run',
      hostOptions: { effectMs: 300 },
    })
    const max = maxInFlight(r.edges, (e) => e.key, r.killed)
    const worst = Math.max(...max.values())
    const times = r.edges.map((e) => e.at)
    const spanMs = Math.max(...times) - Math.min(...times)
    console.log(
      `SCORE flow-${name}-${hosts}p runs=300 keys=10 limit=3 max_per_key=${worst} completed=${r.counts.completed} handlers=${r.edges.filter((e) => e.edge === 'start').length} interrupted_reruns=${r.interrupted} handlers_span_ms=${spanMs} ideal_span_ms=${(300 / 30) * 300}`,
    )
    expect(max.size).toBe(10)
    expect(worst).toBeLessThanOrEqual(3)
    expect(r.counts.completed).toBe(300)
    expect(runsEnded(r.edges)).toBe(300)
  }, 300_000)

const effectLevel = (name: string, spec: (dir: string) => string) =>
  it(`${name}: an effect with concurrency.limit 2 called by 100 runs over 3 processes, kill -9 part-way: never more than 2 attempts in flight`, async () => {
    const setup = fresh(spec)
    const r = await runOverHosts(setup, {
      hosts: 3,
      runs: 100,
      definitionName: 'calling',
      keyOf: () => 'x',
      killAfter: 30,
      what: 'effect',
      hostOptions: { effectMs: 150 },
    })
    const max = maxInFlight(r.edges, () => 'all', r.killed)
    console.log(
      `SCORE flow-effect-${name}-3p runs=100 limit=2 max_in_flight=${max.get('all')} completed=${r.counts.completed} attempts=${r.edges.filter((e) => e.edge === 'start').length} open_on_killed=${r.openOnVictim}`,
    )
    expect(max.get('all')).toBeLessThanOrEqual(2)
    expect(r.counts.completed).toBe(100)
    expect(runsEnded(r.edges)).toBe(100)
  }, 300_000)

describe('flow control across processes on one SQLite file', () => {
  runLevel('sqlite', (dir) => `sqlite:${join(dir, 'runs.db')}`, 2)

  it('startAt 2 s ahead, the process killed -9 and another started before it: the run starts once, not early', async () => {
    const setup = fresh((dir) => `sqlite:${join(dir, 'runs.db')}`)
    const { cluster } = setup
    const first = await cluster.spawnHost('first')
    const startAt = Date.now() + 2000
    const res = await fetch(`${first.url}/runs`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        kind: 'workflow',
        definitionName: 'keyed',
        runId: 'later',
        input: { key: 'k' },
        startAt,
      }),
    })
    const body = (await res.json()) as { state: { status: string } }
    expect(body.state.status).toBe('queued')
    await cluster.kill(first)
    expect(Date.now()).toBeLessThan(startAt)
    await cluster.spawnHost('second')
    await until('the delayed run to start and end', () =>
      cluster.edges().some((e) => e.runId === 'later' && e.edge === 'end'),
    )
    // Another moment for a second start, had there been one.
    await new Promise((resolve) => setTimeout(resolve, 1500))
    const starts = cluster.edges().filter((e) => e.runId === 'later' && e.edge === 'start')
    console.log(
      `SCORE flow-startat-restart starts=${starts.length} late_ms=${starts[0].at - startAt} host=${starts[0].host}`,
    )
    expect(starts).toHaveLength(1)
    expect(starts[0].at).toBeGreaterThanOrEqual(startAt)
    expect(starts[0].host).toBe('second')
  }, 120_000)
})

if (postgresAvailable('flow-hosts')) {
  const schemas = testSchemas('flow_hosts')
  describe('flow control across hosts on one Postgres schema', () => {
    runLevel('pg', () => `postgres:${schemas.next()}`, 3)
    effectLevel('pg', () => `postgres:${schemas.next()}`)
  })
}
