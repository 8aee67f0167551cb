// A seeded random schedule of signals, wakes, kills (-9) and restarts over
// three processes on one SQLite file, checked against a single process (memory store) fed
// the same inputs: the same final state for every run, and each effect called at most
// 1 + (kills) times. Prints its seed (SKEIN_SEED replays one).
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createEngine } from 'skein'
import { afterAll, expect, it } from 'vitest'
import { type ClusterNode, call, ownershipCluster, until } from '../support/ownership-cluster.js'
import { gated, gatedModules } from './gated.js'

const dirs: string[] = []
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true })
})

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

type Input = { runId: string; type: 'go' | 'go2' | 'wake' }

/** The single-process model: the same inputs, in the same order, on one engine. */
async function model(runIds: string[], inputs: Input[]): Promise<Record<string, string>> {
  const engine = createEngine({ modules: gatedModules({ name: 'model', effectMs: 0 }) })
  for (const runId of runIds) await engine.start(gated, undefined, { runId })
  for (const input of inputs) {
    if (input.type === 'wake') await engine.wake(input.runId)
    else
      await engine.signal(input.runId, [{ type: input.type }], {
        idempotencyKey: `${input.type}-${input.runId}`,
      })
  }
  await (await engine.runtime).idle()
  const out: Record<string, string> = {}
  for (const runId of runIds) out[runId] = (await engine.getRun(runId)).status
  await engine.stop()
  return out
}

async function simulate(seed: number): Promise<string[]> {
  const rand = random(seed)
  const dir = mkdtempSync(join(tmpdir(), 'skein-sim-'))
  dirs.push(dir)
  const cluster = ownershipCluster(`sqlite:${join(dir, 'runs.db')}`, join(dir, 'calls.jsonl'), {
    effectMs: 200,
    leaseMs: 1500,
    pollMs: 100,
  })
  const failures: string[] = []
  try {
    let spawned = 0
    const live: ClusterNode[] = await Promise.all(
      [0, 1, 2].map(() => cluster.spawnNode(`p${spawned++}`)),
    )
    const pick = () => live[Math.floor(rand() * live.length)]
    const runIds = Array.from({ length: 8 }, (_, i) => `sim-${seed}-${i}`)
    for (const runId of runIds) {
      const started = await call(pick().url, 'POST', '/runs', {
        kind: 'workflow',
        definitionName: 'gated',
        runId,
      })
      expect([200, 201]).toContain(started.status)
    }
    // Half the runs get both signals (complete), the others only `go` (stay parked on go2).
    const inputs: Input[] = []
    let kills = 0
    for (let step = 0; step < 30; step++) {
      const runId = runIds[Math.floor(rand() * runIds.length)]
      const r = rand()
      if (r < 0.08 && kills < 3) {
        // kill -9 a process and start a new one in its place
        const victim = live.splice(Math.floor(rand() * live.length), 1)[0]
        await cluster.kill(victim)
        kills++
        live.push(await cluster.spawnNode(`p${spawned++}`))
        continue
      }
      const full = runIds.indexOf(runId) % 2 === 0
      const type: Input['type'] = r < 0.25 ? 'wake' : r < 0.65 || !full ? 'go' : 'go2'
      inputs.push({ runId, type })
      const node = pick()
      const path = type === 'wake' ? `/runs/${runId}/wake` : `/runs/${runId}/events`
      const body =
        type === 'wake' ? undefined : { events: [{ type }], idempotencyKey: `${type}-${runId}` }
      const answer = await call(node.url, 'POST', path, body)
      // A process killed mid-call drops the connection: the input is sent again below.
      if (answer.status !== 200) failures.push(`${type} ${runId} on ${node.name}: ${answer.status}`)
    }
    // Every planned input once more (keyed: a no-op where it landed), on live processes.
    for (const [i, runId] of runIds.entries()) {
      for (const type of i % 2 === 0 ? (['go', 'go2'] as const) : (['go'] as const)) {
        inputs.push({ runId, type })
        const sent = await call(pick().url, 'POST', `/runs/${runId}/events`, {
          events: [{ type }],
          idempotencyKey: `${type}-${runId}`,
        })
        if (sent.status !== 200) failures.push(`resend ${type} ${runId}: ${sent.status}`)
      }
    }
    const expected = await model(runIds, inputs)
    const settled = async () => {
      for (const runId of runIds) {
        const { body } = await call(pick().url, 'GET', `/runs/${runId}/status`)
        const waitsOnly = body.effects?.every((e: { status: string }) => e.status !== 'started')
        if (body.status !== expected[runId] || !waitsOnly) return false
      }
      return true
    }
    await until('every run to reach the model state', settled, 60_000).catch(() =>
      failures.push('runs did not reach the model states'),
    )
    for (const runId of runIds) {
      const { body } = await call(pick().url, 'GET', `/runs/${runId}`)
      if (body.state.status !== expected[runId])
        failures.push(`${runId}: ${body.state.status}, model ${expected[runId]}`)
    }
    const perEffect = new Map<string, number>()
    for (const c of cluster.calls()) {
      const key = `${c.runId}/${c.round}`
      perEffect.set(key, (perEffect.get(key) ?? 0) + 1)
    }
    for (const [key, count] of perEffect) {
      if (count > 1 + kills) failures.push(`${key} called ${count} times with ${kills} kills`)
    }
    return failures
  } finally {
    await cluster.close()
  }
}

it('seeded schedules over three processes match a single process', async () => {
  const first = Number(process.env.SKEIN_SEED ?? Date.now() % 100_000)
  const seeds = [first, first + 1]
  let failures = 0
  for (const seed of seeds) {
    const found = await simulate(seed)
    console.log(`ownership-sim seed=${seed} failures=${found.length}`)
    for (const f of found) console.log(`  ${f}`)
    failures += found.length
  }
  console.log(`SCORE ownership-sim seeds=${seeds.join(',')} failures=${failures}`)
  expect(failures).toBe(0)
}, 180_000)
