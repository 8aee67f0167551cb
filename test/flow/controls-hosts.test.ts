// Rate, debounce and singleton across processes on one store (real child processes of
// flow-host-child.ts, real HTTP): 3 hosts on one Postgres schema, 2 processes on one SQLite
// file. Each proof prints a SCORE line; timings are printed, never asserted.
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import type { EventStore, RunStatus } from 'skein'
import { beforeEach, describe, expect, it } from 'vitest'
import { postgresAvailable, testSchemas } from '../support/postgres.js'
import {
  clusterFixture,
  eventsOf,
  type FlowHost,
  type flowHosts,
  maxInWindow,
  request,
  startOn,
  until,
} from './flow-hosts.js'

/** The runs of one definition in the store, with their status. */
async function runsOf(store: EventStore, definitionName: string) {
  const page = await store.listSummaries!({ definitionName, limit: 1000 })
  return page.runs.map((r) => ({ runId: r.runId, status: r.status as RunStatus }))
}

function controlsProofs(name: string, storeSpec: (dir: string) => string, count: number) {
  // Inside the describe: the processes end (after each try) before the file's schemas are
  // dropped.
  const fresh = clusterFixture()
  let cluster: ReturnType<typeof flowHosts>
  let store: EventStore
  let hosts: FlowHost[] = []
  // Each try on a store and processes of its own: a retried proof must not count the first
  // try's runs (they are counted by definition) nor start on its run ids.
  beforeEach(async () => {
    const setup = fresh(storeSpec)
    cluster = setup.cluster
    store = setup.reader()
    hosts = cluster.hosts
    await cluster.spawnHost('h0')
    await Promise.all(Array.from({ length: count - 1 }, (_, i) => cluster.spawnHost(`h${i + 1}`)))
  }, 120_000)

  it(`boots ${count} processes`, async () => {
    expect(hosts).toHaveLength(count)
  })

  it('rate 20/s: no 1-second window admits more than 20; throughput over 5 s', async () => {
    const total = 140
    const ids = Array.from({ length: total }, (_, i) => `rate-${i}`)
    // Starts spread over the hosts, 12 requests in flight, all due at one time (startAt, on
    // the hosts' clock: this machine's) so the queue is full when the window opens.
    const due = Date.now() + 15_000
    const queue = [...ids]
    await Promise.all(
      Array.from({ length: 12 }, async (_, w) => {
        for (let id = queue.shift(); id; id = queue.shift()) {
          const host = hosts[(w + ids.indexOf(id)) % count]
          await startOn(host, 'rated', { k: 'r', n: 0 }, { runId: id, startAt: due })
        }
      }),
    )
    expect(Date.now()).toBeLessThan(due)
    await until(
      'every rated run to complete',
      async () => {
        const rows = await runsOf(store, 'rated')
        return rows.length === total && rows.every((r) => r.status === 'completed')
      },
      180_000,
    )
    const admitted: number[] = []
    const threadStarts: number[] = []
    for (const id of ids) {
      const log = await eventsOf(hosts[0], id)
      admitted.push(log.find((e) => e.type === 'runtime.run.admitted').payload.admittedAt)
      threadStarts.push(log.find((e) => e.type === 'runtime.thread.started').ts)
    }
    const handlerStarts = cluster
      .edges()
      .filter((e) => e.runId.startsWith('rate-') && e.edge === 'start')
      .map((e) => e.at)
    const first = Math.min(...admitted)
    const inFive = admitted.filter((t) => t < first + 5000).length
    const throughput = inFive / 100
    const byStore = maxInWindow(admitted, 1000)
    const lag = threadStarts.map((t, i) => t - admitted[i])
    console.log(
      `SCORE flow-rate-${name} limit=20/1000ms runs=${total} max_admitted_in_any_1s=${byStore} max_thread_starts_in_any_1s=${maxInWindow(threadStarts, 1000)} max_handler_starts_in_any_1s=${maxInWindow(handlerStarts, 1000)} admission_to_thread_start_ms_p50=${lag.sort((a, b) => a - b)[lag.length >> 1]} max=${lag.at(-1)} admitted_first_5s=${inFive} throughput=${throughput.toFixed(2)}`,
    )
    expect(byStore).toBeLessThanOrEqual(20)
    expect(throughput).toBeGreaterThanOrEqual(0.9)
  }, 240_000)

  it(`debounce: 50 starts of one key over ${Math.min(count, 2)} processes are one run, with the last input`, async () => {
    const spread = Math.min(count, 2)
    const answers: string[] = []
    for (let n = 0; n < 50; n++) {
      answers.push((await startOn(hosts[n % spread], 'debounced', { k: 'seq', n })).runId)
    }
    const burst = await Promise.all(
      Array.from({ length: 50 }, (_, n) =>
        startOn(hosts[n % spread], 'debounced', { k: 'burst', n }),
      ),
    )
    const rows = await until(
      'both debounced runs to complete',
      async () => {
        const r = await runsOf(store, 'debounced')
        return r.length >= 2 && r.every((x) => x.status === 'completed')
      },
      120_000,
    ).then(() => runsOf(store, 'debounced'))
    await sleep(2000)
    const after = await runsOf(store, 'debounced')
    const seqState = (await request(hosts[count - 1], `/runs/${answers[0]}`)).state
    const burstIds = new Set(burst.map((b) => b.runId))
    const burstState = (await request(hosts[count - 1], `/runs/${[...burstIds][0]}`)).state
    const executions = cluster
      .edges()
      .filter((e) => e.edge === 'start' && (e.key === 'seq' || e.key === 'burst')).length
    console.log(
      `SCORE flow-debounce-${name} starts=50 sequential_runs=${new Set(answers).size} burst_runs=${burstIds.size} runs_in_store=${after.length} handler_executions=${executions} last_input=${seqState.output?.n?.n}`,
    )
    expect(new Set(answers).size).toBe(1)
    expect(burstIds.size).toBe(1)
    expect(rows).toHaveLength(2)
    expect(after).toHaveLength(2)
    expect(executions).toBe(2)
    expect(seqState.output.n).toEqual({ k: 'seq', n: 49 })
    expect(burstState.output.n.k).toBe('burst')
  }, 180_000)

  it(`singleton skip: 50 concurrent starts over ${count} processes make one run`, async () => {
    const answers = await Promise.all(
      Array.from({ length: 50 }, (_, n) => startOn(hosts[n % count], 'skipper', { k: 's', n })),
    )
    const ids = new Set(answers.map((a) => a.runId))
    const rows = await runsOf(store, 'skipper')
    console.log(
      `SCORE flow-singleton-skip-${name} starts=50 distinct_answers=${ids.size} runs_in_store=${rows.length}`,
    )
    expect(ids.size).toBe(1)
    expect(rows).toHaveLength(1)
    await request(hosts[0], `/runs/${[...ids][0]}/events`, { events: [{ type: 'app.go' }] })
  }, 120_000)

  it(`singleton queue: 50 concurrent starts over ${count} processes run one at a time`, async () => {
    await Promise.all(
      Array.from({ length: 50 }, (_, n) => startOn(hosts[n % count], 'queuer', { k: 'q', n })),
    )
    let maxActive = 0
    let completed = 0
    for (let round = 0; completed < 50 && round < 1000; round++) {
      const rows = await runsOf(store, 'queuer')
      const active = rows.filter((r) => r.status === 'running')
      completed = rows.filter((r) => r.status === 'completed').length
      maxActive = Math.max(maxActive, active.length)
      if (active.length === 1) {
        await request(hosts[round % count], `/runs/${active[0].runId}/events`, {
          events: [{ type: 'app.go' }],
        })
      } else await sleep(20)
    }
    console.log(
      `SCORE flow-singleton-queue-${name} starts=50 completed=${completed} max_running_at_once=${maxActive}`,
    )
    expect(maxActive).toBe(1)
    expect(completed).toBe(50)
  }, 300_000)
}

describe('flow control across 2 processes on one SQLite file', () => {
  controlsProofs('2p-sqlite', (dir) => `sqlite:${join(dir, 'runs.db')}`, 2)
})

if (postgresAvailable('flow-controls-hosts')) {
  const schemas = testSchemas('flow-controls-hosts')
  describe('flow control across 3 host processes on one Postgres schema', () => {
    controlsProofs('3-hosts-pg', () => `postgres:${schemas.next()}`, 3)
  })
}
