// The one workload driver every engine in `npm run bench -- peers` runs under (Skein on SQLite
// and on Postgres, DBOS Transact, Restate). Each engine's file (bench/peers/<engine>.ts or
// bench/peers/<engine>/workloads.ts) implements `PeerSystem` the way that engine's docs write
// it; this file times the same calls for all of them, in one child process per round, and
// prints one `RESULT {json}` line. Imports nothing but Node (the peers' own folders import it).
import { execFileSync } from 'node:child_process'
import { readFileSync } from 'node:fs'

export interface PeerSystem {
  /** One 3-step run (three sequential durable steps), resolved when it has completed. */
  threeSteps(): Promise<void>
  /** One run of 10 sequential durable steps. */
  tenSteps(): Promise<void>
  /** One run: a step, 16 parallel steps, a step that joins them. */
  fanOut(): Promise<void>
  /**
   * One run that waits for a signal: resolves with `send`, a function that sends the signal
   * and resolves when the step after the wait has run, once the run is waiting.
   */
  parkForSignal(key: string): Promise<() => Promise<void>>
  /** Starts `n` runs that each sleep 1 s between two steps; resolves with each one's lateness. */
  sleepers(n: number): Promise<number[]>
  /** Starts `n` runs whose first step never returns in this process; resolves once all are in it. */
  stuck?(n: number): Promise<void>
  /** After a kill -9 of the process that ran `stuck`: resolves when all `n` runs completed. */
  recovered?(n: number): Promise<void>
  /** Bytes the engine's store holds now (tables and indexes, or files on disk). */
  storeBytes(): Promise<number>
  /** Other processes whose CPU is the engine's (a database's backends, a server). */
  serverPids(): Promise<number[]>
  /** Processes of the engine's own that a crash takes down with this one (Restate's server). */
  ownedPids?(): number[]
  close(): Promise<void>
}

export interface Sizes {
  seq: number
  par: number
  ten: number
  fan: number
  signal: number
  sleepers: number
  stuck: number
}

export const FULL_SIZES: Sizes = {
  seq: 200,
  par: 800,
  ten: 100,
  fan: 100,
  signal: 100,
  sleepers: 1000,
  stuck: 1000,
}
export const SMOKE_SIZES: Sizes = {
  seq: 5,
  par: 32,
  ten: 3,
  fan: 3,
  signal: 3,
  sleepers: 20,
  stuck: 20,
}

export const CONCURRENCY = 16
const now = () => performance.now()

/** Completions reported by steps, by key: the step calls `hit`, the driver awaits `wait`. */
export class Marks {
  private readonly waiting = new Map<string, (value: number) => void>()
  private readonly early = new Map<string, number>()
  hit(key: string, value = now()): void {
    const resolve = this.waiting.get(key)
    if (resolve) {
      this.waiting.delete(key)
      resolve(value)
    } else this.early.set(key, value)
  }
  wait(key: string): Promise<number> {
    const value = this.early.get(key)
    if (value !== undefined) {
      this.early.delete(key)
      return Promise.resolve(value)
    }
    return new Promise((resolve) => this.waiting.set(key, resolve))
  }
}

/** A counter that resolves `reached(n)` once `add` has been called n times. */
export class Counter {
  count = 0
  private target = Number.POSITIVE_INFINITY
  private done: () => void = () => {}
  add(): void {
    if (++this.count >= this.target) this.done()
  }
  reached(n: number): Promise<void> {
    if (this.count >= n) return Promise.resolve()
    this.target = n
    return new Promise((resolve) => {
      this.done = resolve
    })
  }
}

export const percentile = (values: number[], p: number): number => {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]
}

/** `runs` calls of `one`, `width` at a time: runs/s and each call's latency (ms). */
async function timed(runs: number, width: number, one: () => Promise<void>) {
  let next = 0
  const times: number[] = []
  const t0 = now()
  await Promise.all(
    Array.from({ length: width }, async () => {
      while (next < runs) {
        next++
        const started = now()
        await one()
        times.push(now() - started)
      }
    }),
  )
  const rate = runs / ((now() - t0) / 1000)
  return { rate, p50: percentile(times, 50), p99: percentile(times, 99) }
}

/** CPU time (ms) of other processes, from /proc (user + system, in clock ticks of 10 ms). */
export function processCpuMs(pids: number[]): number {
  let ticks = 0
  for (const pid of pids) {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
      ticks += Number(fields[11]) + Number(fields[12])
    } catch {
      // a backend that ended: its CPU is lost to the figure (rare: pools keep theirs)
    }
  }
  return ticks * 10
}

/** The local TCP ports of this process's connections to `port` (for its database backends). */
export function ownConnectionPorts(port: number): number[] {
  const out = execFileSync('ss', ['-tnpH', 'state', 'established', `( dport = :${port} )`], {
    encoding: 'utf8',
  })
  return out
    .split('\n')
    .filter((line) => line.includes(`pid=${process.pid},`))
    .map((line) => Number(line.trim().split(/\s+/)[2]?.split(':').at(-1)))
    .filter((p) => Number.isFinite(p))
}

export interface RoundResult {
  seq: { rate: number; p50: number; p99: number }
  par: { rate: number; p50: number; p99: number }
  ten: { rate: number; p50: number; p99: number }
  fan: { rate: number; p50: number; p99: number }
  signal: { p50: number; p99: number }
  cpuMsPerRun: number
  bytesPerStep: number
}

/**
 * Whether SKEIN_PEER_WORKLOADS (comma-separated: seq, ten, fan, signal, sleepers, recovery)
 * names `workload`; unset, every workload runs. The 16-in-flight workload (and its CPU and
 * bytes, workload 7) runs in every round: `SKEIN_PEER_WORKLOADS=par` runs it alone.
 */
export function picked(workload: string): boolean {
  const only = process.env.SKEIN_PEER_WORKLOADS
  return only === undefined || only.split(',').includes(workload)
}

const SKIPPED = { rate: Number.NaN, p50: Number.NaN, p99: Number.NaN }

async function round(system: PeerSystem, sizes: Sizes): Promise<RoundResult> {
  // Warm-up: JIT, pools, plan caches, to the steady state a long-lived server runs in (1,000
  // runs for the full run's 800 measured; docs/benchmarks.md, "Method"). SKEIN_PEER_WARMUP sets
  // its runs, every engine alike.
  const warmup = Number(process.env.SKEIN_PEER_WARMUP ?? Math.max(4, (sizes.par * 5) >> 2))
  await timed(warmup, CONCURRENCY, () => system.threeSteps())
  const seq = picked('seq') ? await timed(sizes.seq, 1, () => system.threeSteps()) : SKIPPED
  const pids = await system.serverPids()
  const bytes0 = await system.storeBytes()
  const cpu0 = process.cpuUsage()
  const other0 = processCpuMs(pids)
  const par = await timed(sizes.par, CONCURRENCY, () => system.threeSteps())
  const cpu = process.cpuUsage(cpu0)
  const cpuMs = (cpu.user + cpu.system) / 1000 + processCpuMs(pids) - other0
  const bytes = (await system.storeBytes()) - bytes0
  const ten = picked('ten') ? await timed(sizes.ten, 1, () => system.tenSteps()) : SKIPPED
  const fan = picked('fan') ? await timed(sizes.fan, 1, () => system.fanOut()) : SKIPPED
  const signalTimes: number[] = []
  for (let i = 0; picked('signal') && i < sizes.signal; i++) {
    const send = await system.parkForSignal(`sig-${process.pid}-${i}`)
    const t0 = now()
    await send()
    signalTimes.push(now() - t0)
  }
  return {
    seq,
    par,
    ten,
    fan,
    signal: picked('signal')
      ? { p50: percentile(signalTimes, 50), p99: percentile(signalTimes, 99) }
      : SKIPPED,
    cpuMsPerRun: cpuMs / sizes.par,
    bytesPerStep: bytes / (sizes.par * 3),
  }
}

/**
 * Runs one mode and prints `RESULT {json}`: `round` (workloads 1–4 and 7), `sleepers`
 * (workload 5), `stuck` (the first half of workload 6: prints `READY {pids}` and waits to be
 * killed) or `recovered` (the second half: prints `RESULT` once every stuck run completed).
 */
export async function runPeer(make: () => Promise<PeerSystem>): Promise<void> {
  const mode = process.env.SKEIN_PEER_MODE ?? 'round'
  const sizes = process.env.SKEIN_PEER_SMOKE === '1' ? SMOKE_SIZES : FULL_SIZES
  const t0 = now() // before the engine opens: recovery may start as it opens
  const system = await make()
  let result: unknown
  if (mode === 'round') result = await round(system, sizes)
  else if (mode === 'sleepers') {
    const late = await system.sleepers(sizes.sleepers)
    result = { p50: percentile(late, 50), p99: percentile(late, 99), runs: late.length }
  } else if (mode === 'stuck') {
    if (!system.stuck) throw new Error('no stuck mode')
    await system.stuck(sizes.stuck)
    // Never a database's backends: Postgres is shared and not the engine under test.
    const pids = [process.pid, ...(system.ownedPids?.() ?? [])]
    process.stdout.write(`READY ${JSON.stringify(pids)}\n`)
    await new Promise(() => {}) // killed by the parent
  } else if (mode === 'recovered') {
    if (!system.recovered) throw new Error('no recovered mode')
    await system.recovered(sizes.stuck)
    // From opening the engine, and from the process's own start (Node and module loading).
    result = { fromOpenMs: now() - t0, fromProcessStartMs: now() }
  } else throw new Error(`unknown mode ${mode}`)
  process.stdout.write(`RESULT ${JSON.stringify(result)}\n`)
  await system.close()
}
