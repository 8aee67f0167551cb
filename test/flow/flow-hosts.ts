// Helpers of the flow-control proofs over real processes (flow-hosts.test.ts,
// controls-hosts.test.ts, flow-kill.test.ts): processes of flow-host-child.ts on one store,
// the handlers' start/end lines, and the measure of how many ran at once.
import { type ChildProcess, spawn } from 'node:child_process'
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import type { EventStore } from 'skein'
import { afterEach } from 'vitest'
import { openStoreSpec } from '../durability/store-spec.js'
import { waitFor } from '../support/children.js'

const CHILD = join(import.meta.dirname, 'flow-host-child.ts')

export interface FlowHost {
  name: string
  proc: ChildProcess
  url: string
  alive: boolean
  exited: Promise<void>
  output(): string
}

/** One line a handler wrote (flow-host-child.ts). */
export interface Edge {
  what: 'run' | 'effect'
  key: string
  runId: string
  edge: 'start' | 'end'
  host: string
  at: number
  pid: number
}

/** Polls `check` until true (a bound that only ends a hung test; nothing timed is asserted). */
export async function until(what: string, check: () => boolean | Promise<boolean>, ms = 120_000) {
  const started = Date.now()
  for (;;) {
    if (await check()) return
    if (Date.now() - started > ms) throw new Error(`timed out waiting for ${what}`)
    await sleep(50)
  }
}

export function flowHosts(storeSpec: string, logFile: string) {
  const hosts: FlowHost[] = []
  async function spawnHost(name: string, options: Record<string, unknown> = {}) {
    const proc = spawn(
      process.execPath,
      [
        '--conditions=skein-source',
        '--import',
        'tsx',
        CHILD,
        storeSpec,
        logFile,
        JSON.stringify({ ...options, name }),
      ],
      { stdio: ['ignore', 'pipe', 'pipe'], env: process.env },
    )
    let out = ''
    let err = ''
    proc.stdout?.on('data', (d) => (out += d))
    proc.stderr?.on('data', (d) => (err += d))
    const exited = new Promise<void>((resolve) => proc.on('exit', () => resolve()))
    await waitFor(`host ${name} to listen`, () => /port \d+/.test(out), {
      children: [{ name: `host ${name}`, proc, output: () => `${out}\n${err}` }],
    })
    const host: FlowHost = {
      name,
      proc,
      url: `http://127.0.0.1:${/port (\d+)/.exec(out)?.[1]}`,
      alive: true,
      exited,
      output: () => `${out}\n${err}`,
    }
    exited.then(() => {
      host.alive = false
    })
    hosts.push(host)
    return host
  }
  return {
    hosts,
    spawnHost,
    edges(): Edge[] {
      if (!existsSync(logFile)) return []
      return readFileSync(logFile, 'utf8')
        .split('\n')
        .filter(Boolean)
        .map((line) => JSON.parse(line) as Edge)
    },
    /** kill -9; resolves once it exited, with the time it was killed. */
    async kill(host: FlowHost): Promise<number> {
      const at = Date.now()
      host.proc.kill('SIGKILL')
      await host.exited
      return at
    },
    async close(): Promise<void> {
      for (const host of hosts) if (host.alive) host.proc.kill('SIGKILL')
      await Promise.all(hosts.map((h) => h.exited))
    },
  }
}

/**
 * Fresh clusters for a test file's tests, each on a store of its own in a new directory; every
 * process, store and directory is gone after each test.
 */
export function clusterFixture() {
  const dirs: string[] = []
  const clusters: Array<ReturnType<typeof flowHosts>> = []
  const stores: EventStore[] = []
  afterEach(async () => {
    for (const cluster of clusters.splice(0)) await cluster.close()
    for (const store of stores.splice(0)) await store.close?.()
    for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true })
  })
  return function fresh(spec: (dir: string) => string) {
    const dir = mkdtempSync(join(tmpdir(), 'skein-flow-hosts-'))
    dirs.push(dir)
    const storeSpec = spec(dir)
    const cluster = flowHosts(storeSpec, join(dir, 'edges.jsonl'))
    clusters.push(cluster)
    /** The store, opened in this process (to read what the processes wrote). */
    const reader = () => {
      const store = openStoreSpec(storeSpec)
      stores.push(store)
      return store
    }
    return { cluster, reader }
  }
}

/** POST /runs to a live host, another one on a refused connection or a 5xx. */
export async function startRun(hosts: FlowHost[], i: number, body: unknown): Promise<number> {
  for (let attempt = 0; attempt < 50; attempt++) {
    const live = hosts.filter((h) => h.alive)
    const host = live[(i + attempt) % live.length]
    try {
      const res = await fetch(`${host.url}/runs`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body),
      })
      await res.text()
      if (res.status < 500) return res.status
    } catch {
      // The host died meanwhile: another one.
    }
    await sleep(50)
  }
  throw new Error('no host took the start')
}

/**
 * The most handlers of one group in flight at any instant, measured from their lines: an
 * execution is [start, end]; one whose process was killed before its end ran until the kill
 * (`killedAt` by pid). At one instant, ends count before starts (a slot is let go after its
 * handler's end line, and the next taken before its start line).
 */
export function maxInFlight(
  edges: Edge[],
  groupOf: (edge: Edge) => string,
  killedAt: Map<number, number> = new Map(),
): Map<string, number> {
  const points: Array<{ group: string; at: number; delta: number }> = []
  const open = new Map<string, Edge>()
  for (const e of edges) {
    const id = `${e.runId}/${e.pid}/${e.what}`
    if (e.edge === 'start') open.set(id, e)
    else open.delete(id)
    points.push({ group: groupOf(e), at: e.at, delta: e.edge === 'start' ? 1 : -1 })
  }
  for (const e of open.values()) {
    const killed = killedAt.get(e.pid)
    points.push({ group: groupOf(e), at: killed ?? Number.POSITIVE_INFINITY, delta: -1 })
  }
  points.sort((a, b) => a.at - b.at || a.delta - b.delta)
  const now = new Map<string, number>()
  const max = new Map<string, number>()
  for (const p of points) {
    const n = (now.get(p.group) ?? 0) + p.delta
    now.set(p.group, n)
    max.set(p.group, Math.max(max.get(p.group) ?? 0, n))
  }
  return max
}

/** A request to a host; its JSON answer (an error on a status of 300 or more). */
export async function request(host: FlowHost, path: string, body?: unknown): Promise<any> {
  const res = await fetch(`${host.url}${path}`, {
    method: body === undefined ? 'GET' : 'POST',
    headers: { 'content-type': 'application/json' },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  })
  const json = await res.json()
  if (res.status >= 300) throw new Error(`${path}: ${res.status} ${JSON.stringify(json)}`)
  return json
}

/** POST /runs of a workflow on one host: its answer ({ runId, state }). */
export const startOn = (host: FlowHost, definitionName: string, input: unknown, extra = {}) =>
  request(host, '/runs', { kind: 'workflow', definitionName, input, ...extra })

/** A run's log, read over HTTP. */
export async function eventsOf(host: FlowHost, runId: string): Promise<any[]> {
  const body = await request(host, `/runs/${runId}/events`)
  return Array.isArray(body) ? body : body.events
}

/** The most of `times` (ms) in any interval of `windowMs`. */
export function maxInWindow(times: number[], windowMs: number): number {
  const sorted = [...times].sort((x, y) => x - y)
  let max = 0
  for (let i = 0, j = 0; i < sorted.length; i++) {
    while (sorted[i] - sorted[j] >= windowMs) j++
    max = Math.max(max, i - j + 1)
  }
  return max
}
