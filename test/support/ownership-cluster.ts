// Real processes sharing one store, each serving the engine over HTTP.
// Reusable for any store spec that test/durability/store-spec.ts opens (`sqlite:<file>`,
// `postgres:<schema>`), so the Postgres branch runs the same proofs.
import { type ChildProcess, spawn } from 'node:child_process'
import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { waitFor } from './children.js'

const CHILD = join(import.meta.dirname, '..', 'ownership', 'node-child.ts')

export interface ClusterOptions {
  /** How long the `own.slow` effect takes (ms). */
  effectMs?: number
  leaseMs?: number
  renewMs?: number
  pollMs?: number
}

export interface ClusterNode {
  name: string
  proc: ChildProcess
  url: string
  output(): string
  exited: Promise<void>
}

export interface ExternalCall {
  runId: string
  round: number
  attempt: number
  by: string
}

/** Polls `check` until it is true (generous, never a timed assertion); throws with `what`. */
export async function until(
  what: string,
  check: () => boolean | Promise<boolean>,
  timeoutMs = 60_000,
): Promise<void> {
  const started = Date.now()
  for (let pause = 10; ; pause = Math.min(pause * 2, 100)) {
    if (await check()) return
    if (Date.now() - started > timeoutMs) throw new Error(`timed out waiting for ${what}`)
    await sleep(pause)
  }
}

export function ownershipCluster(storeSpec: string, callsFile: string, options: ClusterOptions) {
  const nodes: ClusterNode[] = []

  /** Starts one process; `overrides` change the cluster's options for it alone. */
  async function spawnNode(name: string, overrides: ClusterOptions = {}): Promise<ClusterNode> {
    const proc = spawn(
      process.execPath,
      [
        '--conditions=skein-source',
        '--import',
        'tsx',
        CHILD,
        storeSpec,
        callsFile,
        JSON.stringify({ ...options, ...overrides, name }),
      ],
      { stdio: ['ignore', 'pipe', 'pipe'], env: process.env },
    )
    let out = ''
    let err = ''
    proc.stdout?.on('data', (d) => (out += d))
    proc.stderr?.on('data', (d) => (err += d))
    const exited = new Promise<void>((resolve) => proc.on('exit', () => resolve()))
    await waitFor(`node ${name} to listen`, () => /port \d+/.test(out), {
      children: [{ name: `node ${name}`, proc, output: () => `${out}\n${err}` }],
    })
    const port = Number(/port (\d+)/.exec(out)?.[1])
    const node: ClusterNode = {
      name,
      proc,
      url: `http://127.0.0.1:${port}`,
      output: () => `${out}\n${err}`,
      exited,
    }
    nodes.push(node)
    return node
  }

  return {
    nodes,
    spawnNode,
    /** Every external call made so far (one line per execution of the effect). */
    calls(): ExternalCall[] {
      if (!existsSync(callsFile)) return []
      return readFileSync(callsFile, 'utf8')
        .split('\n')
        .filter(Boolean)
        .map((line) => JSON.parse(line) as ExternalCall)
    },
    /** Every append a node's store accepted, with its lease epoch (node-child.ts). */
    accepted(): Array<{
      runId: string
      seq: number
      owner: string
      epoch: number | null
      at: number
    }> {
      const file = `${callsFile}.appends`
      if (!existsSync(file)) return []
      return readFileSync(file, 'utf8')
        .split('\n')
        .filter(Boolean)
        .map((line) => JSON.parse(line))
    },
    async kill(node: ClusterNode, signal: NodeJS.Signals = 'SIGKILL'): Promise<void> {
      node.proc.kill(signal)
      if (signal === 'SIGKILL' || signal === 'SIGTERM') await node.exited
    },
    /** Stops every node (SIGCONT first, in case one is stopped) and waits for the exits. */
    async close(): Promise<void> {
      for (const node of nodes) {
        node.proc.kill('SIGCONT')
        node.proc.kill('SIGKILL')
      }
      await Promise.all(nodes.map((n) => n.exited))
    },
  }
}

/** One JSON request to a node; resolves with the status and body. */
export async function call(
  url: string,
  method: string,
  path: string,
  body?: unknown,
): Promise<{ status: number; body: any }> {
  const response = await fetch(`${url}${path}`, {
    method,
    headers: body === undefined ? {} : { 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  })
  const text = await response.text()
  return { status: response.status, body: text ? JSON.parse(text) : null }
}

/**
 * The many-processes proof on any store: 50 runs started across `nodes`, then every node signals
 * every run `go` (the effect starts) and, while those effects are in flight, `go2`, each under
 * one idempotency key; waits until every run has ended. `statuses` reads the runs' statuses
 * from the store. What the test asserts comes back: start statuses, refused signals, the runs
 * that did not complete, and the external calls against the effects they were for.
 */
export async function signalWhileInFlight(
  nodes: ClusterNode[],
  cluster: { calls(): ExternalCall[] },
  statuses: (runIds: string[]) => Promise<Record<string, string>>,
  waitMs: number,
) {
  const runIds = Array.from({ length: 50 }, (_, i) => `run-${i}`)
  const started = await Promise.all(
    runIds.map((runId, i) =>
      call(nodes[i % nodes.length].url, 'POST', '/runs', {
        kind: 'workflow',
        definitionName: 'gated',
        runId,
      }),
    ),
  )
  const signal = (runId: string, type: string, node: number) =>
    call(nodes[node].url, 'POST', `/runs/${runId}/events`, {
      events: [{ type }],
      idempotencyKey: `${type}-${runId}`,
    })
  const refused = async (type: string) =>
    (
      await Promise.all(runIds.flatMap((runId) => nodes.map((_, n) => signal(runId, type, n))))
    ).filter((r) => r.status !== 200)
  // Every process signals every run `go` under one key: appended once, effect started.
  const refusedGo = await refused('go')
  // While those effects run, every process signals `go2` to every run.
  const refusedGo2 = await refused('go2')
  await until(
    'every run to complete',
    async () => {
      const s = await statuses(runIds)
      return runIds.every((id) => s[id] === 'completed' || s[id] === 'failed')
    },
    waitMs,
  )
  const final = await statuses(runIds)
  const calls = cluster.calls()
  return {
    runs: runIds.length,
    startStatuses: started.map((r) => r.status),
    refusedGo,
    refusedGo2,
    failed: runIds.filter((id) => final[id] !== 'completed'),
    effects: new Set(calls.map((c) => `${c.runId}/${c.round}`)).size,
    calls: calls.length,
  }
}
