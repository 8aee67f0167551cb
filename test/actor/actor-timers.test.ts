import { mkdirSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import Database from 'better-sqlite3'
import { cellFileName } from 'skein/actor'
import { sqliteStore } from 'skein/sqlite'
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest'
import { ended, exitWithin } from '../support/children.js'
import { type ActorChild, pool, spawnActorHost } from './child-process.js'

// Timers across restarts (docs/operations.md) on real processes: runs parked on timers in their cells, the host killed
// with SIGKILL, a new host on the same directory: the cells needing timer recovery are opened
// from the run registry, and every timer fires once, none early.

const RUNS = Number(process.env.SKEIN_ACTOR_TIMER_RUNS ?? 1000)
const root = mkdtempSync(join(tmpdir(), 'skein-actor-timers-'))
const children: ActorChild[] = []
// Each try on a directory of its own, its processes gone after it: a retry must not find the
// first try's runs, nor its host still working on them.
let tries = 0
let dir = ''
beforeEach(() => {
  dir = join(root, `${++tries}`)
  mkdirSync(dir)
})
afterEach(async () => {
  for (const c of children.splice(0)) await c.kill('SIGKILL')
})
afterAll(() => rmSync(root, { recursive: true, force: true }))

async function post(url: string, path: string, body: unknown) {
  const res = await fetch(url + path, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  })
  const json = (await res.json()) as any
  if (!res.ok) throw new Error(`${path}: ${res.status} ${JSON.stringify(json)}`)
  return json
}

/** Runs with a pending wake in the registry (open cells count as pending too). */
function pendingInRegistry(): Array<{ run_id: string; in_ms: number }> {
  const db = new Database(join(dir, 'registry.db'), { readonly: true, fileMustExist: true })
  try {
    return db
      .prepare('SELECT run_id, wake_at - ? AS in_ms FROM actor_runs WHERE wake_at IS NOT NULL')
      .all(Date.now()) as Array<{ run_id: string; in_ms: number }>
  } finally {
    db.close()
  }
}

describe('actor host: timers across kill -9 (procedure 4)', () => {
  it(`${RUNS} runs parked on timers, host killed, restarted: every timer fires once, none early`, async () => {
    const first = spawnActorHost(dir, 60_000)
    children.push(first)
    const url = await first.url
    const runIds: string[] = []
    for (let i = 0; i < RUNS; i++) runIds.push(`nap-${String(i).padStart(5, '0')}`)
    // Every deadline lands after the estimated end of the creations (calibrated on the first
    // 16 starts, with margin), spread over 4 s: most timers are pending when the host is killed.
    const startedAt = Date.now()
    const create = (runId: string, ms: number) =>
      post(url, '/runs', { kind: 'workflow', definitionName: 'nap', runId, input: { ms } })
    const spread = (runId: string) => (Number(runId.slice(4)) % 100) * 40
    const calibration = runIds.slice(0, 16)
    await pool(calibration, 8, (runId) => create(runId, 1_000 + spread(runId)))
    const perRun = (Date.now() - startedAt) / calibration.length
    const fireAt = Date.now() + (RUNS - 16) * perRun * 1.5 + 3_000
    await pool(runIds.slice(16), 8, async (runId) => {
      await create(runId, Math.max(3_000, Math.round(fireAt - Date.now())) + spread(runId))
    })
    const created = Date.now()
    await first.kill('SIGKILL')
    const killedAt = Date.now()

    const second = spawnActorHost(dir, 500)
    children.push(second)
    await second.url
    // Done when every cell has closed with no deadline left (idle cells close after 0.5 s).
    const deadline = Date.now() + 240_000
    while (pendingInRegistry().length > 0) {
      if (ended(second.proc) || Date.now() > deadline) {
        const pending = JSON.stringify(pendingInRegistry().slice(0, 10))
        const err = second.output().err.slice(-3000)
        const how = ended(second.proc) ?? 'timeout'
        throw new Error(`${how}: pending ${pending}; host stderr: ${err}`)
      }
      await sleep(500)
    }
    second.proc.kill('SIGTERM')
    const output = () => `${second.output().out}\n${second.output().err}`
    expect(
      (await exitWithin({ name: 'the second host', proc: second.proc, output }, 60_000)).code,
    ).toBe(0)

    let firedOnce = 0
    let early = 0
    let duplicates = 0
    let pendingAtKill = 0
    let completed = 0
    for (const runId of runIds) {
      const store = sqliteStore({ path: join(dir, 'runs', cellFileName(runId)) })
      try {
        const events = await store.read(runId)
        const set = events.filter((e) => e.type === 'runtime.timer.set')
        const fired = events.filter((e) => e.type === 'runtime.timer.fired')
        if (fired.length === 1) firedOnce++
        if (fired.length > 1) duplicates++
        const at = (set[0]?.payload as { at?: number } | undefined)?.at ?? Number.POSITIVE_INFINITY
        if (fired.some((e) => e.ts < at)) early++
        if (fired[0] && fired[0].ts > killedAt) pendingAtKill++
        if (events.at(-1)?.type === 'runtime.run.completed') completed++
      } finally {
        await store.close()
      }
    }
    console.log(
      `SCORE actor-timers runs=${RUNS} fired_once=${firedOnce} early=${early} duplicates=${duplicates} pending_at_kill=${pendingAtKill} completed=${completed} create_s=${((created - startedAt) / 1000).toFixed(1)}`,
    )
    expect({ firedOnce, early, duplicates, completed }).toEqual({
      firedOnce: RUNS,
      early: 0,
      duplicates: 0,
      completed: RUNS,
    })
    expect(pendingAtKill).toBeGreaterThan(0)
  }, 600_000)
})
