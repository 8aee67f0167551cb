// Human-readable renderings of the server's answers (the `--json` flag skips all of this).
import type {
  DefinitionInfo,
  QueueInfo,
  ReplayStep,
  RunOperationalStatus,
  VersionReport,
} from '../core/api-types.js'
import type { EventEnvelope, RunState } from '../core/envelope.js'
import type { Json, JsonObject } from '../core/json.js'
import type { RunSummary } from '../core/ports.js'
import type { ProjectorStatus } from '../core/projector-status.js'

const time = (ms: number | null | undefined) =>
  ms === null || ms === undefined || !Number.isFinite(ms) ? '-' : new Date(ms).toISOString()

/** A JSON value on one line, cut to `max` characters. */
export function brief(value: unknown, max = 100): string {
  if (value === undefined) return ''
  const text = JSON.stringify(value) ?? String(value)
  return text.length > max ? `${text.slice(0, max - 1)}…` : text
}

/** Columns padded to the widest cell; the last column is not padded. */
export function table(rows: string[][]): string {
  if (rows.length === 0) return ''
  const widths = rows[0].map((_, i) => Math.max(...rows.map((r) => (r[i] ?? '').length)))
  return rows
    .map((r) =>
      r
        .map((cell, i) => (i === r.length - 1 ? cell : cell.padEnd(widths[i])))
        .join('  ')
        .trimEnd(),
    )
    .join('\n')
}

export function formatSummaries(runs: readonly RunSummary[]): string {
  if (runs.length === 0) return 'no runs'
  return table([
    ['RUN', 'STATUS', 'DEFINITION', 'UPDATED', 'NEXT DEADLINE'],
    ...runs.map((r) => [
      r.runId,
      r.status,
      `${r.kind}:${r.definitionName}@${r.definitionVersion}`,
      time(r.updatedAt),
      time(r.nextDeadlineAt),
    ]),
  ])
}

export function formatState(state: RunState): string {
  const lines = [
    `run ${state.runId}: ${state.status}`,
    `  definition  ${state.kind}:${state.definitionName}@${state.definitionVersion}`,
    `  last seq    ${state.lastSeq}`,
    `  updated     ${time(state.updatedAt)}`,
  ]
  if (state.output !== undefined) lines.push(`  output      ${brief(state.output, 200)}`)
  if (state.error) lines.push(`  error       ${state.error.code}: ${state.error.message}`)
  const threads = Object.values(state.threads)
  if (threads.length > 0) {
    lines.push('  threads')
    for (const t of threads) {
      const parent = t.parentThreadId ? ` (child of ${t.parentThreadId})` : ''
      lines.push(`    ${t.threadId}  ${t.status}  ${t.kind}:${t.definitionName}${parent}`)
    }
  }
  return lines.join('\n')
}

export function formatEvent(e: EventEnvelope): string {
  const thread = e.threadId ? ` [${e.threadId}]` : ''
  const payload = brief(e.payload, 120)
  return `${String(e.seq).padStart(5)}  ${time(e.ts)}  ${e.type}${thread}${payload ? `  ${payload}` : ''}`
}

export function formatReplay(step: ReplayStep | null, runId: string, seq: number): string {
  if (!step) return `run ${runId}: seq ${seq} is not retained (trimmed or beyond the tail)`
  return [
    `run ${runId} at seq ${step.seq}: ${step.event.type}`,
    `  payload  ${brief(step.event.payload, 200)}`,
    `  status   ${step.before.status} -> ${step.after.status}`,
    ...Object.values(step.after.threads).map((t) => {
      const before = step.before.threads[t.threadId]?.status ?? '(new)'
      return `  thread   ${t.threadId}  ${before} -> ${t.status}`
    }),
  ].join('\n')
}

export function formatInspect(s: RunOperationalStatus): string {
  const lines = [`run ${s.runId}: ${s.status}  (log ${s.head}..${s.tail})`]
  lines.push('threads')
  for (const t of s.threads)
    lines.push(`  ${t.threadId}  ${t.status}  ${t.kind}:${t.definitionName}`)
  lines.push(s.waits.length ? 'open waits' : 'open waits: none')
  for (const w of s.waits)
    lines.push(`  ${w.waitId}  ${w.threadId}  ${w.key}  on ${brief(w.on, 80)}`)
  lines.push(s.effects.length ? 'effects' : 'effects: none pending')
  for (const e of s.effects) {
    const err = e.lastError ? `  last error ${e.lastError.code}: ${e.lastError.message}` : ''
    const due = e.deadlineAt ? `  due ${time(e.deadlineAt)}` : ''
    lines.push(`  ${e.effectId}  ${e.type}  attempt ${e.attempt}  ${e.status}${due}${err}`)
  }
  lines.push(s.deadlines.length ? 'deadlines' : 'deadlines: none')
  for (const d of s.deadlines) {
    const what = d.waitId ?? d.effectId ?? ''
    lines.push(`  ${time(d.at)}  ${d.kind}  ${d.threadId}  ${what}`)
  }
  return lines.join('\n')
}

/** Definitions with their versions (`*` marks the default) and the default version's input. */
export function formatDefinitions(definitions: readonly DefinitionInfo[]): string {
  if (definitions.length === 0) return 'no definitions'
  return table([
    ['KIND', 'NAME', 'VERSIONS', 'INPUT'],
    ...definitions.map((d) => [
      d.kind,
      d.name,
      d.versions
        .map((v) => (v.version === d.defaultVersion ? `${v.version}*` : v.version))
        .join(', '),
      inputSummary(d.versions.find((v) => v.version === d.defaultVersion)?.inputSchema),
    ]),
  ])
}

/** Flow control's queues, one line per key (`skein queues`). */
export function formatQueues(queues: readonly QueueInfo[]): string {
  if (queues.length === 0) return 'no queued or admitted runs'
  return table([
    ['QUEUE', 'KEY', 'LIMIT', 'RATE', 'ACTIVE', 'QUEUED', 'OLDEST WAIT'],
    ...queues.map((q) => [
      q.queue,
      q.key === '' ? '-' : q.key,
      q.limit === null ? '-' : String(q.limit),
      q.rate === null ? '-' : `${q.rate.limit}/${q.rate.periodMs} ms`,
      String(q.active),
      String(q.queued),
      q.oldestWaitMs === null ? '-' : `${(q.oldestWaitMs / 1000).toFixed(1)} s`,
    ]),
  ])
}

export function formatVersions(report: VersionReport): string {
  if (report.versions.length === 0) return 'no definitions and no runs'
  const rows = table([
    ['KIND', 'NAME', 'VERSION', 'ACTIVE RUNS', 'HERE', 'FLEET', 'SHAPE', 'SAFE TO REMOVE'],
    ...report.versions.map((v) => [
      v.kind,
      v.name,
      v.isDefault ? `${v.version}*` : v.version,
      String(v.activeRuns),
      v.registered ? 'registered' : 'missing',
      v.live ? 'live' : v.activeRuns > 0 ? 'STRANDED' : 'none',
      v.fingerprint ?? '-',
      v.safeToDelete ? 'yes' : 'no',
    ]),
  ])
  const notes = [
    report.unexecutableRuns > 0 &&
      `${report.unexecutableRuns} run(s) wait for a host that registers their version`,
    report.strandedRuns > 0 &&
      `${report.strandedRuns} run(s) stranded: no live host registers their version; they resume when one starts`,
  ].filter((note) => typeof note === 'string')
  return [rows, ...notes].join('\n')
}

/** `{ sku: string, qty?: integer }` for an object schema, else the schema in brief. */
function inputSummary(schema: JsonObject | undefined): string {
  if (schema === undefined) return '-'
  const properties = schema.properties
  if (schema.type !== 'object' || !isObject(properties)) return brief(schema, 60)
  const required = Array.isArray(schema.required) ? schema.required : []
  const fields = Object.entries(properties).map(([name, property]) => {
    const optional = required.includes(name) ? '' : '?'
    return `${name}${optional}: ${typeName(property)}`
  })
  return fields.length === 0 ? '{}' : `{ ${fields.join(', ')} }`
}

const isObject = (value: Json | undefined): value is JsonObject =>
  typeof value === 'object' && value !== null && !Array.isArray(value)

function typeName(property: Json): string {
  if (!isObject(property)) return 'any'
  if (typeof property.type === 'string') return property.type
  if (Array.isArray(property.type)) return property.type.join(' | ')
  if (property.enum !== undefined) return 'enum'
  return property.anyOf !== undefined || property.oneOf !== undefined ? 'union' : 'any'
}

export function formatProjectors(projectors: readonly ProjectorStatus[]): string {
  if (projectors.length === 0) return 'no projectors'
  return table([
    ['PROJECTOR', 'STATE', 'OWNER', 'POSITION', 'LAG EVENTS', 'LAG MS', 'LAST ERROR'],
    ...projectors.map((p) => [
      p.name,
      p.state,
      p.owner ?? '-',
      String(p.position),
      String(p.lagEvents),
      String(p.lagMs),
      p.lastError ? brief(`${p.lastError.runId ?? ''} ${p.lastError.message}`.trim(), 80) : '-',
    ]),
  ])
}
