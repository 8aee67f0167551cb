// Three processes serve HTTP on one SQLite file; a client spreads starts,
// signals and SSE subscriptions across them at random. Every run completes and every SSE
// stream sees every event of its run once, in order (events appended by other processes
// included), then the end frame. Real processes, real HTTP; seeded, polled.
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, afterEach, beforeEach, expect, it } from 'vitest'
import { within } from '../support/children.js'
import { type ClusterNode, call, ownershipCluster } from '../support/ownership-cluster.js'

const root = mkdtempSync(join(tmpdir(), 'skein-http-own-'))
let tries = 0
let cluster: ReturnType<typeof ownershipCluster>
// Each try on a store and a calls file of its own, its processes gone after it: a retry must
// not find the first try's runs and calls, nor its processes serving them.
beforeEach(() => {
  const dir = join(root, `${++tries}`)
  mkdirSync(dir)
  cluster = ownershipCluster(`sqlite:${join(dir, 'runs.db')}`, join(dir, 'calls.jsonl'), {
    effectMs: 300,
    leaseMs: 3000,
    pollMs: 100,
  })
})
afterEach(() => cluster.close())
afterAll(() => rmSync(root, { recursive: true, force: true }))

/** A seeded generator (mulberry32), so a failure names a schedule that can be replayed. */
function random(seed: number) {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

/** Reads one SSE stream to its `end` frame; resolves with the seqs seen and the end's lastSeq. */
async function stream(node: ClusterNode, runId: string): Promise<{ seqs: number[]; last: number }> {
  const response = await fetch(`${node.url}/runs/${runId}/events?live=true&fromSeq=1`, {
    headers: { accept: 'text/event-stream' },
  })
  expect(response.status).toBe(200)
  const reader = (response.body as ReadableStream<Uint8Array>).getReader()
  const decoder = new TextDecoder()
  const seqs: number[] = []
  let buffer = ''
  for (;;) {
    const { value, done } = await reader.read()
    if (done) throw new Error(`stream of ${runId} on ${node.name} closed before its end frame`)
    buffer += decoder.decode(value, { stream: true })
    let cut = buffer.indexOf('\n\n')
    while (cut >= 0) {
      const frame = buffer.slice(0, cut)
      buffer = buffer.slice(cut + 2)
      const id = /^id: (\d+)$/m.exec(frame)
      if (/^event: end$/m.test(frame)) {
        const data = JSON.parse(/^data: (.*)$/m.exec(frame)?.[1] ?? '{}') as { lastSeq: number }
        await reader.cancel()
        return { seqs, last: data.lastSeq }
      }
      if (id) seqs.push(Number(id[1]))
      cut = buffer.indexOf('\n\n')
    }
  }
}

it('3 processes, random starts/signals/SSE across them: every run completes, every stream sees every event once, in order', async () => {
  const seed = Number(process.env.SKEIN_SEED ?? Date.now() % 100_000)
  console.log(`ownership-http seed=${seed}`)
  const rand = random(seed)
  const nodes = await Promise.all(['h0', 'h1', 'h2'].map((n) => cluster.spawnNode(n)))
  const pick = () => nodes[Math.floor(rand() * nodes.length)]
  const runIds = Array.from({ length: 24 }, (_, i) => `web-${i}`)
  const plans = runIds.map((runId) => ({
    runId,
    start: pick(),
    watchers: [pick(), pick()],
    go: [pick(), pick()],
    go2: [pick(), pick()],
  }))
  const streams: Array<Promise<{ runId: string; node: string; seqs: number[]; last: number }>> = []
  await Promise.all(
    plans.map(async (plan) => {
      const started = await call(plan.start.url, 'POST', '/runs', {
        kind: 'workflow',
        definitionName: 'gated',
        runId: plan.runId,
      })
      expect([200, 201]).toContain(started.status)
      for (const node of plan.watchers) {
        streams.push(
          stream(node, plan.runId).then((r) => ({ ...r, runId: plan.runId, node: node.name })),
        )
      }
      const sends = [
        ...plan.go.map((n) => ['go', n] as const),
        ...plan.go2.map((n) => ['go2', n] as const),
      ]
      await Promise.all(
        sends.map(async ([type, node]) => {
          const sent = await call(node.url, 'POST', `/runs/${plan.runId}/events`, {
            events: [{ type }],
            idempotencyKey: `${type}-${plan.runId}`,
          })
          expect(sent.status).toBe(200)
        }),
      )
    }),
  )
  const ended = new Set<string>()
  for (const s of streams)
    void s.then(
      (r) => ended.add(`${r.runId}@${r.node}`),
      () => {},
    )
  const results = await within('every stream to its end frame', Promise.all(streams), 60_000, () =>
    JSON.stringify({
      ended: ended.size,
      of: streams.length,
      open: plans.flatMap((p) =>
        p.watchers.map((n) => `${p.runId}@${n.name}`).filter((k) => !ended.has(k)),
      ),
      nodes: cluster.nodes.map(
        (n) => `${n.name}: ${n.proc.exitCode ?? n.proc.signalCode ?? 'running'}`,
      ),
    }),
  )
  let bad = 0
  for (const result of results) {
    const expected = Array.from({ length: result.last }, (_, i) => i + 1)
    if (JSON.stringify(result.seqs) !== JSON.stringify(expected)) {
      bad++
      console.log(`stream of ${result.runId} on ${result.node}: ${result.seqs.join(',')}`)
    }
  }
  for (const runId of runIds) {
    const run = await call(pick().url, 'GET', `/runs/${runId}`)
    expect(run.body.state.status).toBe('completed')
    const log = await call(pick().url, 'GET', `/runs/${runId}/events`)
    const last = results.find((r) => r.runId === runId)?.last
    expect(log.body.events.length).toBe(last)
  }
  const calls = cluster.calls()
  console.log(
    `SCORE ownership-http seed=${seed} processes=3 runs=${runIds.length} streams=${results.length} bad_streams=${bad} effects=${new Set(calls.map((c) => `${c.runId}/${c.round}`)).size} external_calls=${calls.length}`,
  )
  expect(bad).toBe(0)
}, 120_000)
