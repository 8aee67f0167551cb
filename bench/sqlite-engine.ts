// The engine on the embedded SQLite store (synchronous FULL) against the physical floor: a
// hand-written durable loop on raw better-sqlite3 with the store's own schema.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { PerformanceObserver } from 'node:perf_hooks'
import { setTimeout as sleep } from 'node:timers/promises'
import { pathToFileURL } from 'node:url'
import Database from 'better-sqlite3'
import { createEngine, defineEffect, defineModule, type EventEnvelope } from 'skein'
import { approval } from 'skein/approval'
import { sqliteStore } from 'skein/sqlite'
import { defineWorkflow, workflow } from 'skein/workflow'
import { type FloorRows, floorEvent, floorRunId, STEPS } from './floor-rows.js'
import { median, percentile, printRows, type Row } from './table.js'

const now = () => performance.now()
const CONCURRENCY = 16

const benchEffects = defineModule({
  namespace: 'bench',
  effects: { step: defineEffect<{ i: number }, { i: number }>({ execute: async (x) => x }) },
})
const chainOf = (name: string, n: number) => {
  const nodes: Record<string, any> = {}
  for (let i = 0; i < n; i++) {
    nodes[`s${i}`] = {
      after: i === 0 ? [] : [`s${i - 1}`],
      run: (ctx: any) => ctx.invoke('bench.step', { i }),
    }
  }
  return defineWorkflow({ name, nodes })
}
const three = chainOf('three', 3)
const ten = chainOf('ten', 10)
const naps = defineWorkflow({
  name: 'naps',
  nodes: Object.fromEntries(
    Array.from({ length: 10 }, (_, i) => [`t${i}`, { run: (ctx: any) => ctx.sleep(1500 + i) }]),
  ),
})
const parked = defineWorkflow({
  name: 'parked',
  nodes: { w: { run: (ctx) => ctx.waitFor('app.go') } },
})
const modules = () => [
  workflow({ definitions: [three, ten, naps, parked] }),
  approval(),
  benchEffects,
]

interface CommitCounter {
  /** Write transactions: BEGINs and autocommit writes. */
  commits: number
  /** Those committed under synchronous = FULL: each fsyncs the WAL. */
  durable: number
  /** Time spent inside SQLite statement calls, when the driver was made with `timing`. */
  sqliteMs: number
}

/**
 * A better-sqlite3 constructor that counts commits and the fsynced (durable) ones. With `timing`
 * it also times every statement call (to split a run's cost between SQLite and everything
 * else); without, statements that write nothing are left unwrapped.
 */
function countingDriver(counter: CommitCounter, timing = false) {
  const timed = <A extends unknown[], R>(fn: (...args: A) => R) =>
    !timing
      ? fn
      : (...args: A): R => {
          const t0 = now()
          try {
            return fn(...args)
          } finally {
            counter.sqliteMs += now() - t0
          }
        }
  function Counting(path: string, options?: Database.Options) {
    const db = new Database(path, options)
    let full = true
    const prepare = db.prepare.bind(db)
    const pragma = timed(db.pragma.bind(db))
    const exec = timed(db.exec.bind(db))
    const noteLevel = (source: string) => {
      const level = /^(?:PRAGMA\s+)?synchronous\s*=\s*(\w+)/i.exec(source)
      if (level) full = level[1].toUpperCase() === 'FULL'
    }
    ;(db as any).pragma = (source: string, opts?: Database.PragmaOptions) => {
      noteLevel(source)
      return pragma(source, opts)
    }
    ;(db as any).exec = (source: string) => {
      noteLevel(source)
      return exec(source)
    }
    ;(db as any).prepare = (sql: string) => {
      const st = prepare(sql)
      const begins = /^\s*BEGIN/i.test(sql)
      if (!timing && !begins && st.reader) return st
      const run = timed(st.run.bind(st))
      if (timing) {
        ;(st as any).get = timed(st.get.bind(st))
        ;(st as any).all = timed(st.all.bind(st))
      }
      ;(st as any).run = (...args: unknown[]) => {
        if (begins || !db.inTransaction) {
          counter.commits++
          if (full) counter.durable++
        }
        return run(...args)
      }
      return st
    }
    return db
  }
  return () => Counting as unknown as typeof Database
}

/** CPU ms per run of the last `floorRuns` (this process: the loop and SQLite's own work). */
let floorCpuMs = 0

/**
 * The floor: 3 steps of plain appends (19 events), one FULL transaction per step. `rows`: small
 * rows (the floor the ratios are taken against) or rows the size of Skein's (floor-rows.ts).
 */
function floorRuns(
  path: string,
  runs: number,
  concurrency: number,
  rows: FloorRows = 'small',
): number {
  sqliteStore({ path }).close()
  const db = new Database(path)
  db.pragma('journal_mode = WAL')
  db.pragma('synchronous = FULL')
  const sized = rows === 'skein'
  const run = db.prepare<[string], { run_no: number; tail: number }>(
    'SELECT run_no, tail FROM skein_runs WHERE run_id = ?',
  )
  // Skein's run row: meta and lease written with the first commit, then time and lease expiry
  // with each one, and the status with the last.
  const newRun = sized
    ? db.prepare(`INSERT INTO skein_runs (run_id, status, kind, definition_name,
        definition_version, created_at, updated_at, lease_owner, lease_epoch, lease_expires_at)
        VALUES (?, 'running', 'workflow', 'three', 'v1', ?, ?, 'vm:floor', 1, ?)`)
    : db.prepare('INSERT INTO skein_runs (run_id) VALUES (?)')
  const insert = db.prepare(
    `INSERT INTO skein_events (run_no, seq, id, ts, type, thread_id, origin, causation_id,
      effect_id, idempotency_key, event_key, payload) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
  )
  const setTail = sized
    ? db.prepare(`UPDATE skein_runs SET tail = ?, updated_at = ?, lease_expires_at = ?,
        status = coalesce(?, status) WHERE run_no = ?`)
    : db.prepare('UPDATE skein_runs SET tail = ? WHERE run_no = ?')
  const append = (runId: string, step: number) => {
    const types = STEPS[step]
    const at = Date.now()
    const row = run.get(runId)
    const runNo = row
      ? row.run_no
      : Number((sized ? newRun.run(runId, at, at, at + 10_000) : newRun.run(runId)).lastInsertRowid)
    const from = (row?.tail ?? 0) + 1
    types.forEach((type, i) => {
      const seq = from + i
      const e = floorEvent(rows, runId, step, seq, type)
      insert.run(
        runNo,
        seq,
        e.id,
        at,
        type,
        e.thread,
        'runtime',
        null,
        e.effect,
        null,
        null,
        e.payload,
      )
    })
    const tail = from + types.length - 1
    if (!sized) setTail.run(tail, runNo)
    else setTail.run(tail, at, at + 10_000, step === STEPS.length - 1 ? 'completed' : null, runNo)
  }
  // One transaction per step, shared by `concurrency` runs (group commit).
  const tx = db.transaction((ids: string[], step: number) => {
    for (const id of ids) append(id, step)
  })
  const t0 = now()
  const cpu0 = process.cpuUsage()
  for (let r = 0; r < runs; r += concurrency) {
    const ids = Array.from({ length: Math.min(concurrency, runs - r) }, (_, i) =>
      floorRunId(rows, r + i),
    )
    for (let step = 0; step < STEPS.length; step++) tx.immediate(ids, step)
  }
  const rate = runs / ((now() - t0) / 1000)
  const cpu = process.cpuUsage(cpu0)
  floorCpuMs = (cpu.user + cpu.system) / 1000 / runs
  db.close()
  return rate
}

/** `ownership: false` measures the engine with run ownership off (it is on by default). */
async function skeinRuns(
  path: string,
  runs: number,
  concurrency: number,
  timing = false,
  ownership?: false,
) {
  const counter: CommitCounter = { commits: 0, durable: 0, sqliteMs: 0 }
  const store = sqliteStore({ path, driver: countingDriver(counter, timing) })
  const engine = createEngine({
    store,
    modules: modules(),
    ...(ownership === false ? { ownership } : {}),
  })
  await engine.ready()
  counter.commits = 0
  counter.durable = 0
  counter.sqliteMs = 0
  let next = 0
  // Garbage-collection pauses during the round (the 'gc' entries of perf_hooks).
  let gcMs = 0
  const gc = new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) gcMs += entry.duration
  })
  gc.observe({ entryTypes: ['gc'] })
  const t0 = now()
  const cpu0 = process.cpuUsage()
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < runs) {
        next++
        const { state } = await engine.start(three)
        if (state.status !== 'completed') throw new Error(`3-step run ended ${state.status}`)
      }
    }),
  )
  const elapsed = now() - t0
  const cpu = process.cpuUsage(cpu0)
  const cpuMs = (cpu.user + cpu.system) / 1000 / runs
  gc.disconnect()
  const rate = runs / (elapsed / 1000)
  const commitsPerStep = counter.commits / (runs * 3)
  const durablePerStep = counter.durable / (runs * 3)
  await engine.stop()
  await store.close()
  const usPerRun = (ms: number) => (ms * 1000) / runs
  const split = {
    totalUs: usPerRun(elapsed),
    sqliteUs: usPerRun(counter.sqliteMs),
    gcUs: usPerRun(gcMs),
  }
  return { rate, commitsPerStep, durablePerStep, split, cpuMs }
}

async function tenStepLatency(path: string, runs: number): Promise<number[]> {
  const store = sqliteStore({ path })
  const engine = createEngine({ store, modules: modules() })
  await engine.ready()
  const times: number[] = []
  for (let i = 0; i < runs; i++) {
    const t0 = now()
    const { state } = await engine.start(ten)
    times.push(now() - t0)
    if (state.status !== 'completed') throw new Error(`10-step run ended ${state.status}`)
  }
  await engine.stop()
  await store.close()
  return times
}

/** 10,000 timers over 1,000 runs, all due while the host is down: time from boot to done. */
async function restartRecovery(path: string): Promise<{ ms: number; fired: number }> {
  const store = sqliteStore({ path })
  const first = createEngine({ store, modules: modules() })
  const created = now()
  for (let i = 0; i < 1000; i += 50) {
    await Promise.all(Array.from({ length: 50 }, () => first.start(naps)))
  }
  await first.stop()
  await store.close()
  const left = 1600 - (now() - created)
  if (left > 0) await sleep(left) // every timer is now due
  const t0 = now()
  const reopened = sqliteStore({ path })
  const second = createEngine({ store: reopened, modules: modules() })
  await second.ready()
  let done = 0
  while (now() - t0 < 30_000) {
    done = (await second.listRunSummaries({ status: 'completed', limit: 1000 })).runs.length
    if (done === 1000) break
    await sleep(10)
  }
  const ms = now() - t0
  const fired = (await reopened.read((await reopened.listRuns())[0])).filter(
    (e: EventEnvelope) => e.type === 'runtime.timer.fired',
  ).length
  await second.stop()
  await reopened.close()
  return { ms: done === 1000 ? ms : Number.POSITIVE_INFINITY, fired: fired * 1000 }
}

/** A parked run of `events` events (snapshots on), in a closed store at `path`. */
async function parkedRunOf(path: string, events: number): Promise<string> {
  const store = sqliteStore({ path })
  const engine = createEngine({ store, modules: modules() })
  const { runId } = await engine.start(parked)
  const batch = Array.from({ length: 100 }, (_, i) => ({ type: 'app.note', payload: { i } }))
  while ((await engine.getRun(runId)).lastSeq < events) await engine.signal(runId, batch)
  await engine.stop()
  await store.close()
  return runId
}

/** Cold getRun (fresh store and engine each time): the median of 21 opens. */
async function coldGetRun(path: string, runId: string): Promise<number> {
  // Sub-millisecond figures: many fresh opens, so one GC pause cannot move the median.
  const times: number[] = []
  for (let i = 0; i < 21; i++) {
    const s = sqliteStore({ path })
    const e = createEngine({ store: s, modules: modules(), rescanTimers: false })
    await e.ready()
    const t0 = now()
    await e.getRun(runId)
    times.push(now() - t0)
    await e.stop()
    await s.close()
  }
  return median(times)
}

export async function benchSqliteEngine(): Promise<Row[]> {
  const dir = mkdtempSync(join(tmpdir(), 'skein-bench-sqlite-'))
  let file = 0
  const db = () => join(dir, `b${++file}.db`)
  try {
    const rows: Row[] = []
    // Warm-up rounds (JIT tiers, statement caches) on both sides, so figures are a warm host's.
    floorRuns(db(), 300, CONCURRENCY)
    await skeinRuns(db(), 1000, CONCURRENCY)
    // Rounds interleave the floor and Skein, so a noisy stretch of the shared disk hits both.
    const floorSeqRates: number[] = []
    const floorParRates: number[] = []
    // The same loop writing rows the size of Skein's (floor-rows.ts).
    const floorSizedRates: number[] = []
    const seq: number[] = []
    const par: number[] = []
    // The same rounds with run ownership off (on by default): what the lease costs one process.
    const seqOff: number[] = []
    const parOff: number[] = []
    const cpu = { floor: [] as number[], skein: [] as number[] }
    const commits: Array<{ commitsPerStep: number; durablePerStep: number }> = []
    // On and off take turns going first, so neither always follows the floor's heavy round.
    const onAndOff = async (runs: number, concurrency: number, offFirst: boolean) => {
      const off = offFirst ? await skeinRuns(db(), runs, concurrency, false, false) : undefined
      const on = await skeinRuns(db(), runs, concurrency)
      return { on, off: off ?? (await skeinRuns(db(), runs, concurrency, false, false)) }
    }
    for (let i = 0; i < 5; i++) {
      floorSeqRates.push(floorRuns(db(), 500, 1))
      const a = await onAndOff(500, 1, i % 2 === 1)
      floorParRates.push(floorRuns(db(), 1600, CONCURRENCY))
      cpu.floor.push(floorCpuMs)
      floorSizedRates.push(floorRuns(db(), 1600, CONCURRENCY, 'skein'))
      const b = await onAndOff(1600, CONCURRENCY, i % 2 === 1)
      cpu.skein.push(b.on.cpuMs)
      seq.push(a.on.rate)
      par.push(b.on.rate)
      seqOff.push(a.off.rate)
      parOff.push(b.off.rate)
      if (i === 0) commits.push(a.on, b.on)
    }
    // Paired per-round ratios show the spread that a median of rates hides.
    const spread = (skein: number[], floor: number[]) => {
      const ratios = skein.map((rate, i) => rate / floor[i])
      return `per-round ratios ${Math.min(...ratios).toFixed(2)}–${Math.max(...ratios).toFixed(2)}`
    }
    const floorSeq = median(floorSeqRates)
    const floorPar = median(floorParRates)
    const s = median(seq)
    const p = median(par)
    rows.push({
      name: '3-step workflow, sequential',
      value: s,
      unit: 'runs/s',
      baseline: floorSeq,
      ratio: s / floorSeq,
      target: 0.5,
      note: `vs raw better-sqlite3 loop, FULL; ${spread(seq, floorSeqRates)}`,
    })
    rows.push({
      name: `3-step workflow, ${CONCURRENCY} concurrent`,
      value: p,
      unit: 'runs/s',
      baseline: floorPar,
      ratio: p / floorPar,
      target: 0.5,
      note: `vs raw loop with group commit; ${spread(par, floorParRates)}`,
    })
    rows.push({
      name: `CPU per run, ${CONCURRENCY} concurrent (this process: engine, store and SQLite)`,
      value: median(cpu.skein),
      unit: 'ms',
      baseline: median(cpu.floor),
      ratio: median(cpu.skein) / median(cpu.floor),
      note: "baseline: the raw loop's; an fsync's wait is not CPU",
    })
    const sized = median(floorSizedRates)
    rows.push({
      name: `raw loop, ${CONCURRENCY} concurrent, rows the size of Skein's (ids, thread and effect ids, payloads, run meta)`,
      value: sized,
      unit: 'runs/s',
      baseline: floorPar,
      ratio: sized / floorPar,
      note: `baseline: the raw loop; Skein at ${(p / sized).toFixed(2)} of it (${spread(par, floorSizedRates)})`,
    })
    // The median of each round's on/off ratio: the two ran back to back, so a noisy stretch
    // of the shared disk hits both (steadier than the ratio of the two medians).
    const pairedOnOff = (on: number[], off: number[]) =>
      median(on.map((rate, i) => rate / off[i])).toFixed(2)
    const sOff = median(seqOff)
    const pOff = median(parOff)
    rows.push({
      name: '3-step workflow, sequential, ownership off',
      value: sOff,
      unit: 'runs/s',
      baseline: floorSeq,
      ratio: sOff / floorSeq,
      note: `on/off ${(s / sOff).toFixed(2)}, paired per round ${pairedOnOff(seq, seqOff)}; ${spread(seqOff, floorSeqRates)}`,
    })
    rows.push({
      name: `3-step workflow, ${CONCURRENCY} concurrent, ownership off`,
      value: pOff,
      unit: 'runs/s',
      baseline: floorPar,
      ratio: pOff / floorPar,
      note: `on/off ${(p / pOff).toFixed(2)}, paired per round ${pairedOnOff(par, parOff)}; ${spread(parOff, floorParRates)}`,
    })
    // Where a concurrent run's time goes: one more round with every SQLite call timed (kept
    // out of the rounds above: the timing itself costs a little).
    const { split } = await skeinRuns(db(), 1600, CONCURRENCY, true)
    rows.push({
      name: `  of which inside SQLite statements (${CONCURRENCY} concurrent)`,
      value: split.sqliteUs,
      unit: 'µs/run',
      baseline: 1e6 / floorPar,
      ratio: split.sqliteUs / (1e6 / floorPar),
      note: `engine and the rest ${(split.totalUs - split.sqliteUs).toFixed(0)} µs/run; baseline: the raw loop's whole run`,
    })
    rows.push({
      name: `  of which garbage-collection pauses (${CONCURRENCY} concurrent)`,
      value: split.gcUs,
      unit: 'µs/run',
      baseline: split.totalUs,
      ratio: split.gcUs / split.totalUs,
      note: 'perf_hooks gc entries; baseline: the whole run',
    })
    for (const [label, c] of [
      ['sequential', commits[0]],
      [`${CONCURRENCY} concurrent`, commits[1]],
    ] as const) {
      rows.push({
        name: `durable (fsynced) commits per step (${label})`,
        value: c.durablePerStep,
        unit: 'commits',
        target: 1,
        note: `${c.commitsPerStep.toFixed(3)} commits in all`,
      })
    }
    const lat = await tenStepLatency(db(), 300)
    rows.push({
      name: '10-step effect workflow start→complete p50',
      value: median(lat),
      unit: 'ms',
      target: 5,
      note: 'FULL',
    })
    rows.push({
      name: '10-step effect workflow start→complete p99',
      value: percentile(lat, 99),
      unit: 'ms',
    })
    const recovery = await restartRecovery(db())
    rows.push({
      name: '10,000 due timers over 1,000 runs: boot → all fired',
      value: recovery.ms,
      unit: 'ms',
      target: 5000,
      note: `${recovery.fired} timer.fired`,
    })
    // Rounds alternate the two runs, so a noisy stretch of the machine hits both.
    const smallPath = db()
    const bigPath = db()
    const smallRun = await parkedRunOf(smallPath, 1_000)
    const bigRun = await parkedRunOf(bigPath, 100_000)
    const smallTimes: number[] = []
    const bigTimes: number[] = []
    for (let i = 0; i < 5; i++) {
      smallTimes.push(await coldGetRun(smallPath, smallRun))
      bigTimes.push(await coldGetRun(bigPath, bigRun))
    }
    const small = median(smallTimes)
    const big = median(bigTimes)
    rows.push({ name: 'cold getRun, 1,000-event run', value: small, unit: 'ms' })
    rows.push({
      name: 'cold getRun, 100,000-event run (snapshots)',
      value: big,
      unit: 'ms',
      baseline: small,
      ratio: big / small,
      target: 2,
      note: 'ratio ≤ target',
    })
    return rows
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  printRows('engine on sqlite (synchronous FULL)', await benchSqliteEngine())
}
