// Invariants every log must keep, whatever happened to the process that wrote it.
import type { EventEnvelope, EventStore, Module } from 'skein'
import { emptyFold, foldEvents } from '../../src/core/fold/index.js'
import { Registry } from '../../src/core/registry.js'
import type { Ack } from './ack-store.js'

export interface LogReport {
  runs: number
  events: number
  /** Acknowledged appends missing (or replaced by another event at that seq). */
  lost: number
  /** Idempotency keys recorded on more than one event, plus runs started twice. */
  dup: number
  problems: string[]
  logs: Map<string, EventEnvelope[]>
}

/**
 * Reads every run and checks: seqs are 1..tail without gaps, each ack is present with its
 * event id, each idempotency key is recorded once, and for every stored snapshot,
 * snapshot + fold(tail) equals fold(whole log).
 */
export async function checkLogs(
  store: EventStore,
  modules: readonly Module[],
  acks: readonly Ack[] = [],
): Promise<LogReport> {
  const registry = new Registry(modules)
  const report: LogReport = { runs: 0, events: 0, lost: 0, dup: 0, problems: [], logs: new Map() }
  const problem = (text: string) => {
    if (report.problems.length < 20) report.problems.push(text)
  }
  for (const runId of await store.listRuns()) {
    const log = await store.read(runId)
    report.logs.set(runId, log)
    report.runs++
    report.events += log.length
    const { head, tail } = await store.bounds(runId)
    if (head !== 1 || tail !== log.length)
      problem(`${runId}: bounds ${head}..${tail}, ${log.length} events`)
    log.forEach((e, i) => {
      if (e.seq !== i + 1) problem(`${runId}: seq ${e.seq} at position ${i + 1} (gap)`)
      if (e.runId !== runId) problem(`${runId}: event ${e.seq} belongs to ${e.runId}`)
    })
    const keys = new Map<string, number>()
    for (const e of log) {
      if (e.idempotencyKey !== undefined)
        keys.set(e.idempotencyKey, (keys.get(e.idempotencyKey) ?? 0) + 1)
    }
    for (const [key, n] of keys) {
      if (n > 1) {
        report.dup += n - 1
        problem(`${runId}: idempotency key ${key} recorded ${n} times`)
      }
    }
    const starts = log.filter((e) => e.type === 'runtime.run.started').length
    if (starts !== 1) {
      report.dup += Math.max(0, starts - 1)
      problem(`${runId}: ${starts} runtime.run.started events`)
    }
    await checkSnapshots(store, registry, runId, log, problem)
  }
  for (const ack of acks) {
    const e = report.logs.get(ack.runId)?.[ack.seq - 1]
    if (!e || e.seq !== ack.seq || e.id !== ack.id) {
      report.lost++
      problem(`lost ack ${ack.runId}#${ack.seq} (${ack.id}): found ${e ? e.id : 'nothing'}`)
    }
  }
  return report
}

const plain = (value: unknown) => JSON.parse(JSON.stringify(value))

async function checkSnapshots(
  store: EventStore,
  registry: Registry,
  runId: string,
  log: EventEnvelope[],
  problem: (text: string) => void,
): Promise<void> {
  let full: unknown
  try {
    full = plain(foldEvents(registry, runId, log, emptyFold(runId)))
  } catch (error) {
    problem(`${runId}: the log does not fold: ${(error as Error).message}`)
    return
  }
  const snapshots = store.snapshots
  if (!snapshots) return
  for (const seq of await snapshots.list(runId)) {
    const snapshot = await snapshots.latest(runId, seq)
    if (!snapshot || snapshot.seq !== seq) continue
    if (seq > log.length) {
      problem(`${runId}: snapshot at ${seq} is beyond the tail ${log.length}`)
      continue
    }
    const resumed = foldEvents(registry, runId, log.slice(seq), snapshot.data as any)
    if (!sameJson(plain(resumed), full)) {
      problem(`${runId}: snapshot@${seq} + fold(tail) differs from fold(log)`)
    }
  }
}

/** Deep equality of JSON values, ignoring key order. */
export function sameJson(a: unknown, b: unknown): boolean {
  if (a === b) return true
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false
  if (Array.isArray(a) !== Array.isArray(b)) return false
  const ka = Object.keys(a)
  const kb = Object.keys(b)
  if (ka.length !== kb.length) return false
  return ka.every((k) => k in (b as object) && sameJson((a as any)[k], (b as any)[k]))
}

/** Each node of each workflow thread finished exactly once; every run completed. */
export function checkCompletion(
  logs: Map<string, EventEnvelope[]>,
  nodesOf: Record<string, string[]>,
): { incomplete: number; dup: number; problems: string[] } {
  let incomplete = 0
  let dup = 0
  const problems: string[] = []
  for (const [runId, log] of logs) {
    const started = log.find((e) => e.type === 'runtime.run.started')
    const name = (started?.payload as { definitionName?: string })?.definitionName ?? '?'
    if (
      log.at(-1)?.type !== 'runtime.run.completed' &&
      !log.some((e) => e.type === 'runtime.run.completed')
    ) {
      incomplete++
      problems.push(`${runId} (${name}) did not complete; last event ${log.at(-1)?.type}`)
    }
    const finished = new Map<string, number>()
    for (const e of log) {
      if (e.type !== 'workflow.node.finished') continue
      const node = `${e.threadId}/${(e.payload as { nodeId: string }).nodeId}`
      finished.set(node, (finished.get(node) ?? 0) + 1)
    }
    for (const [node, n] of finished) {
      if (n > 1) {
        dup += n - 1
        problems.push(`${runId}: node ${node} finished ${n} times`)
      }
    }
    const expected = nodesOf[name] ?? []
    const seen = new Set([...finished.keys()].map((k) => k.split('/')[1]))
    for (const node of expected) {
      if (!seen.has(node)) problems.push(`${runId}: node ${node} never finished`)
    }
  }
  return { incomplete, dup, problems }
}
