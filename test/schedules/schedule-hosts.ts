// Host processes with schedules on one Postgres schema (schedule-host-child.ts), and reading
// what they started back from the store.
import { type ChildProcess, spawn } from 'node:child_process'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import type { EventStore } from 'skein'
import { servedHost } from '../support/children.js'

const root = join(import.meta.dirname, '..', '..')

export interface SchedHost {
  name: string
  url: string
  child: ChildProcess
  alive: boolean
  exited: Promise<void>
}

export async function startSchedHost(
  name: string,
  schema: string,
  engineOptions: object,
): Promise<SchedHost> {
  const child = spawn(
    process.execPath,
    [
      '--conditions=skein-source',
      '--import',
      'tsx',
      join(root, 'test/schedules/schedule-host-child.ts'),
      schema,
      name,
    ],
    {
      cwd: root,
      env: { ...process.env, SCHED_ENGINE_OPTIONS: JSON.stringify(engineOptions) },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  )
  const { url, exited } = await servedHost(name, child, {
    verbose: !!process.env.SCHED_HOSTS_VERBOSE,
  })
  const host: SchedHost = { name, url, child, alive: true, exited }
  exited.then(() => {
    host.alive = false
  })
  return host
}

export async function killHost(host: SchedHost): Promise<void> {
  if (!host.alive) return
  host.child.kill('SIGKILL')
  await host.exited
}

export async function stopSchedHosts(hosts: readonly SchedHost[]): Promise<void> {
  await Promise.all(
    hosts.map(async (h) => {
      if (!h.alive) return
      h.child.kill('SIGTERM')
      const done = await Promise.race([h.exited.then(() => true), sleep(10_000).then(() => false)])
      if (!done) await killHost(h)
    }),
  )
}

/** A run a schedule started: its tick (from its id), when it started, how many starts. */
export interface TickRun {
  runId: string
  tick: number
  startedAt: number
  finishedAt: number | null
  starts: number
}

/** Every run of `schedule` (tick runs, not triggers), read from the store, by tick. */
export async function tickRuns(store: EventStore, schedule: string): Promise<TickRun[]> {
  const prefix = `sched:${schedule}:`
  const out: TickRun[] = []
  for (const runId of await store.listRuns()) {
    if (!runId.startsWith(prefix) || runId.includes(':manual:')) continue
    const events = await store.read(runId)
    const started = events.filter((e) => e.type === 'runtime.run.started')
    const end = events.find((e) => /^runtime\.run\.(completed|failed|cancelled)$/.test(e.type))
    out.push({
      runId,
      tick: Date.parse(runId.slice(prefix.length)),
      startedAt: started[0]?.ts ?? Number.NaN,
      finishedAt: end?.ts ?? null,
      starts: started.length,
    })
  }
  return out.sort((a, b) => a.tick - b.tick)
}

export async function call(host: SchedHost, method: string, path: string, body?: unknown) {
  const res = await fetch(`${host.url}${path}`, {
    method,
    headers: body === undefined ? {} : { 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  })
  return { status: res.status, body: (await res.json()) as any }
}
