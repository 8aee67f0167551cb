// Rate, debounce and singleton across host processes on one Postgres schema (real child
// processes, real HTTP). Each proof prints a SCORE line.
import { type ChildProcess, spawn } from 'node:child_process'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { afterAll, describe, expect, it } from 'vitest'
import { postgresAvailable, testSchemas } from '../support/postgres.js'

const root = join(import.meta.dirname, '..', '..')

interface Host {
  url: string
  child: ChildProcess
  exited: Promise<void>
}

const hosts: Host[] = []
afterAll(async () => {
  await Promise.all(
    hosts.splice(0).map(async (h) => {
      h.child.kill('SIGTERM')
      const done = await Promise.race([h.exited.then(() => true), sleep(10_000).then(() => false)])
      if (!done) h.child.kill('SIGKILL')
    }),
  )
})

async function startHost(schema: string): Promise<Host> {
  const child = spawn(
    process.execPath,
    [
      '--conditions=skein-source',
      '--import',
      'tsx',
      join(root, 'test/flow/controls-host-child.ts'),
      schema,
    ],
    { cwd: root, env: process.env, stdio: ['ignore', 'pipe', 'pipe'] },
  )
  let out = ''
  let err = ''
  child.stderr?.on('data', (chunk) => {
    err += chunk
  })
  const exited = new Promise<void>((resolve) => child.on('exit', () => resolve()))
  const url = await new Promise<string>((resolve, reject) => {
    child.stdout?.on('data', (chunk) => {
      out += chunk
      const match = /READY (\S+)/.exec(out)
      if (match) resolve(match[1])
    })
    child.on('exit', (code) => reject(new Error(`host exited ${code}: ${out} ${err}`)))
  })
  const host = { url, child, exited }
  hosts.push(host)
  return host
}

async function post(host: Host, path: string, body: unknown): Promise<any> {
  const res = await fetch(`${host.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  })
  const json = await res.json()
  if (res.status >= 300) throw new Error(`${path}: ${res.status} ${JSON.stringify(json)}`)
  return json
}

const start = (host: Host, definitionName: string, input: unknown, runId?: string) =>
  post(host, '/runs', { kind: 'workflow', definitionName, input, ...(runId ? { runId } : {}) })

async function events(host: Host, runId: string): Promise<any[]> {
  const res = await fetch(`${host.url}/runs/${runId}/events`)
  const body = await res.json()
  return Array.isArray(body) ? body : body.events
}

if (postgresAvailable('flow-controls-hosts')) {
  const schemas = testSchemas('flow-controls-hosts')
  const schema = schemas.next()
  const runsOf = async (definition: string) =>
    (
      await schemas.admin.query(
        `SELECT run_id, status FROM "${schema}".skein_runs WHERE definition_name = $1`,
        [definition],
      )
    ).rows as Array<{ run_id: string; status: string }>
  async function until<T>(read: () => Promise<T>, done: (v: T) => boolean, ms = 120_000) {
    const end = Date.now() + ms
    for (;;) {
      const value = await read()
      if (done(value)) return value
      if (Date.now() > end) throw new Error('condition never held')
      await sleep(50)
    }
  }

  describe('flow control across 3 host processes on one Postgres schema', () => {
    it('boots 3 hosts', async () => {
      await startHost(schema)
      await Promise.all([startHost(schema), startHost(schema)])
      expect(hosts).toHaveLength(3)
    }, 120_000)

    it('rate 20/s: no 1-second window admits more than 20; throughput over 5 s', async () => {
      const total = 140
      const ids = Array.from({ length: total }, (_, i) => `rate-${i}`)
      // Starts spread over the 3 hosts, 12 requests in flight at a time, all due at one time
      // (startAt, on the hosts' clock: this machine's) so the queue is full when the
      // window opens, however slowly the starts arrive.
      const due = Date.now() + 20_000
      const queue = [...ids]
      await Promise.all(
        Array.from({ length: 12 }, async (_, w) => {
          for (let id = queue.shift(); id; id = queue.shift()) {
            await post(hosts[(w + ids.indexOf(id)) % 3], '/runs', {
              ...{ kind: 'workflow', definitionName: 'rated', input: { k: 'r', n: 0 } },
              ...{ runId: id, startAt: due },
            })
          }
        }),
      )
      expect(Date.now()).toBeLessThan(due)
      await until(
        () => runsOf('rated'),
        (rows) => rows.length === total && rows.every((r) => r.status === 'completed'),
      )
      const admitted: number[] = []
      const threadStarts: number[] = []
      for (const id of ids) {
        const log = await events(hosts[0], id)
        const a = log.find((e) => e.type === 'runtime.run.admitted')
        admitted.push(a.payload.admittedAt)
        threadStarts.push(log.find((e) => e.type === 'runtime.thread.started').ts)
      }
      const maxInWindow = (times: number[]) => {
        const sorted = [...times].sort((x, y) => x - y)
        let max = 0
        let j = 0
        for (let i = 0; i < sorted.length; i++) {
          while (sorted[i] - sorted[j] >= 1000) j++
          max = Math.max(max, i - j + 1)
        }
        return max
      }
      const first = Math.min(...admitted)
      const inFive = admitted.filter((t) => t < first + 5000).length
      const throughput = inFive / 100
      const byStore = maxInWindow(admitted)
      const byThreadStart = maxInWindow(threadStarts)
      console.log(
        `SCORE flow-rate-3-hosts-pg limit=20/1000ms runs=${total} max_admitted_in_any_1s=${byStore} max_thread_starts_in_any_1s=${byThreadStart} admitted_first_5s=${inFive} throughput=${throughput.toFixed(2)}`,
      )
      expect(byStore).toBeLessThanOrEqual(20)
      expect(throughput).toBeGreaterThanOrEqual(0.9)
    }, 180_000)

    it('debounce: 50 starts of one key over 2 hosts are one run, with the last input', async () => {
      const answers: string[] = []
      for (let n = 0; n < 50; n++) {
        answers.push((await start(hosts[n % 2], 'debounced', { k: 'seq', n })).runId)
      }
      const burst = await Promise.all(
        Array.from({ length: 50 }, (_, n) => start(hosts[n % 2], 'debounced', { k: 'burst', n })),
      )
      const rows = await until(
        () => runsOf('debounced'),
        (r) => r.length >= 2 && r.every((x) => x.status === 'completed'),
      )
      await sleep(2000)
      const after = await runsOf('debounced')
      const seqRun = answers[0]
      const seqState = (await (await fetch(`${hosts[2].url}/runs/${seqRun}`)).json()).state
      const burstIds = new Set(burst.map((b) => b.runId))
      const burstState = (await (await fetch(`${hosts[2].url}/runs/${[...burstIds][0]}`)).json())
        .state
      console.log(
        `SCORE flow-debounce-2-hosts-pg starts=50 sequential_runs=${new Set(answers).size} burst_runs=${burstIds.size} runs_in_store=${after.length} last_input=${seqState.output?.n?.n}`,
      )
      expect(new Set(answers).size).toBe(1)
      expect(burstIds.size).toBe(1)
      expect(rows).toHaveLength(2)
      expect(after).toHaveLength(2)
      expect(seqState.output).toEqual({ n: { k: 'seq', n: 49 } })
      expect(burstState.output.n.k).toBe('burst')
    }, 180_000)

    it('singleton skip: 50 concurrent starts over 3 hosts make one run', async () => {
      const answers = await Promise.all(
        Array.from({ length: 50 }, (_, n) => start(hosts[n % 3], 'skipper', { k: 's', n })),
      )
      const ids = new Set(answers.map((a) => a.runId))
      const rows = await runsOf('skipper')
      console.log(
        `SCORE flow-singleton-skip-3-hosts-pg starts=50 distinct_answers=${ids.size} runs_in_store=${rows.length}`,
      )
      expect(ids.size).toBe(1)
      expect(rows).toHaveLength(1)
      await post(hosts[0], `/runs/${[...ids][0]}/events`, { events: [{ type: 'app.go' }] })
    }, 120_000)

    it('singleton queue: 50 concurrent starts over 3 hosts run one at a time', async () => {
      await Promise.all(
        Array.from({ length: 50 }, (_, n) => start(hosts[n % 3], 'queuer', { k: 'q', n })),
      )
      let maxActive = 0
      let completed = 0
      for (let round = 0; completed < 50 && round < 500; round++) {
        const rows = await runsOf('queuer')
        const active = rows.filter((r) => r.status === 'running')
        completed = rows.filter((r) => r.status === 'completed').length
        maxActive = Math.max(maxActive, active.length)
        if (active.length === 1) {
          await post(hosts[round % 3], `/runs/${active[0].run_id}/events`, {
            events: [{ type: 'app.go' }],
          })
        } else await sleep(20)
      }
      console.log(
        `SCORE flow-singleton-queue-3-hosts-pg starts=50 completed=${completed} max_running_at_once=${maxActive}`,
      )
      expect(maxActive).toBe(1)
      expect(completed).toBe(50)
    }, 300_000)
  })
}
