// Proof with real processes (docs/workers.md, "Durable tasks"): 3 engine hosts on one Postgres
// schema and 4 worker processes claiming from all of them; one host is killed (SIGKILL) part-way.
// Every run completes, and no attempt is handed to two workers.
import { type ChildProcess, spawn } from 'node:child_process'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { afterAll, afterEach, describe, expect, it } from 'vitest'
import { childWithin, described, ended, waitFor } from '../support/children.js'
import { adminPool, postgresAvailable, testSchemas } from '../support/postgres.js'

const root = join(import.meta.dirname, '..', '..')
const RUNS = 90

interface Child {
  name: string
  proc: ChildProcess
  out: () => string
  output: () => string
  ready: Promise<string>
}

function spawnChild(file: string, args: string[]): Child {
  const proc = spawn(
    process.execPath,
    ['--conditions=skein-source', '--import', 'tsx', join(root, file), ...args],
    { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] },
  )
  let out = ''
  let err = ''
  proc.stderr?.on('data', (d) => {
    err += d
  })
  const child = { name: `${file} ${args[0]}`, proc, out: () => out, output: () => `${out}\n${err}` }
  const ready = childWithin(
    `${child.name} ready`,
    child,
    new Promise<string>((resolve, reject) => {
      proc.stdout?.on('data', (d) => {
        out += d
        const match = /READY ?(\S*)/.exec(out)
        if (match) resolve(match[1])
      })
      proc.on('exit', (code) => reject(new Error(`${file} exited ${code}: ${err}`)))
    }),
    60_000,
  )
  ready.catch(() => {})
  return { ...child, ready }
}

const children: Child[] = []
/** Every child still running is stopped before the schema is dropped. */
async function stopChildren(): Promise<void> {
  const running = children.filter((c) => c.proc.exitCode === null && c.proc.signalCode === null)
  const exited = running.map((c) => new Promise((resolve) => c.proc.once('exit', resolve)))
  for (const c of running) c.proc.kill('SIGKILL')
  await Promise.all(exited)
}
afterAll(stopChildren)

const post = async (url: string, path: string, body: unknown) => {
  const res = await fetch(`${url}${path}`, {
    method: 'POST',
    headers: { authorization: 'Bearer proof-write', 'content-type': 'application/json' },
    body: JSON.stringify(body),
  })
  if (!res.ok) throw new Error(`POST ${path}: ${res.status} ${await res.text()}`)
  return res.json()
}
const status = async (url: string, runId: string) => {
  const res = await fetch(`${url}/runs/${runId}`, {
    headers: { authorization: 'Bearer proof-write' },
  })
  return res.ok ? ((await res.json()).state.status as string) : `http-${res.status}`
}

/** What a run left incomplete looks like: its events, its row's lease and deadline, its task. */
async function stuckRuns(schema: string, url: string, runIds: string[]): Promise<string> {
  const db = adminPool()
  try {
    const lines: string[] = []
    for (const runId of runIds) {
      const res = await fetch(`${url}/runs/${runId}/events`, {
        headers: { authorization: 'Bearer proof-write' },
      })
      const { events = [] } = res.ok ? await res.json() : {}
      const kinds = events.map((e: { seq: number; type: string }) => `${e.seq}:${e.type}`)
      const { rows } = await db.query(
        `SELECT r.status, r.lease_owner, r.lease_epoch, r.lease_expires_at, r.next_deadline_at,
           (SELECT count(*) FROM "${schema}".skein_worker_tasks t WHERE t.run_id = r.run_id) AS tasks
         FROM "${schema}".skein_runs r WHERE r.run_id = $1`,
        [runId],
      )
      lines.push(
        `STUCK ${runId} now=${Date.now()} row=${JSON.stringify(rows[0])} events=${kinds.join(' ')}`,
      )
    }
    return lines.join('\n')
  } finally {
    await db.end()
  }
}

describe.runIf(postgresAvailable('pg-task-hosts'))('worker tasks across Postgres hosts', () => {
  const schemas = testSchemas('pg-task-hosts')
  // A try's processes end with it: a retry must not share the machine with the first try's.
  afterEach(stopChildren)
  it('3 hosts, 4 workers, kill -9 of a host: every run completes, no attempt handed out twice', async () => {
    const schema = schemas.next()
    const hosts = [0, 1, 2].map(() => spawnChild('test/workers/pg-task-host-child.ts', [schema]))
    children.push(...hosts)
    const urls = await Promise.all(hosts.map((h) => h.ready))
    const workers = [0, 1, 2, 3].map((i) =>
      spawnChild('test/workers/pg-task-worker-child.ts', [`w${i}`, ...urls]),
    )
    children.push(...workers)
    await Promise.all(workers.map((w) => w.ready))

    const t0 = Date.now()
    const runIds = Array.from({ length: RUNS }, (_, i) => `job-${i}`)
    await Promise.all(
      runIds.map((runId, i) =>
        post(urls[i % 3], '/runs', { kind: 'workflow', definitionName: 'job', runId }),
      ),
    )
    const handed = () =>
      workers.flatMap((w) =>
        w
          .out()
          .split('\n')
          .filter((l) => l.startsWith('TASK '))
          .map((l) => l.split(' ')),
      )
    // Part-way: a third of the tasks handed out, then the third host dies.
    await waitFor(`${RUNS / 3} tasks handed out`, () => handed().length >= RUNS / 3, {
      children: [...hosts, ...workers],
      seen: () => `${handed().length} handed`,
    })
    hosts[2].proc.kill('SIGKILL')
    const handedAtKill = handed().length

    const survivors = urls.slice(0, 2)
    let left = runIds
    // A survivor (host or worker) that dies is named at once, not after the deadline.
    const expectedAlive = [hosts[0], hosts[1], ...workers]
    let gone: Child | undefined
    const deadline = Date.now() + 120_000
    while (left.length > 0 && Date.now() < deadline) {
      gone = expectedAlive.find((c) => ended(c.proc))
      if (gone) break
      const states = await Promise.all(left.map((id, i) => status(survivors[i % 2], id)))
      left = left.filter((_, i) => states[i] !== 'completed')
      if (left.length > 0) await sleep(250)
    }
    const doneMs = Date.now() - t0

    const byAttempt = new Map<string, string[]>()
    for (const [, worker, runId, effectId, attempt] of handed()) {
      const key = `${runId}/${effectId}#${attempt}`
      byAttempt.set(key, [...(byAttempt.get(key) ?? []), worker])
    }
    const twice = [...byAttempt.values()].filter((w) => w.length > 1).length
    const attempts = byAttempt.size
    const retried = attempts - RUNS
    console.log(
      `SCORE worker-task-hosts hosts=3 workers=4 runs=${RUNS} completed=${RUNS - left.length} incomplete=${left.length} attempts_handed=${attempts} handed_twice=${twice} new_attempts=${retried} handed_at_kill=${handedAtKill} all_done_ms=${doneMs}`,
    )
    if (left.length > 0 && !(gone && gone === hosts[0]))
      console.log(await stuckRuns(schema, survivors[0], left))
    if (gone) throw new Error(`waiting for every run to complete: ${described(gone)}`)
    expect(left).toEqual([])
    expect(twice).toBe(0)
  }, 180_000)
})
