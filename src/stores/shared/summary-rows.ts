import type { RunSummary } from '../../core/ports.js'
import { type AttributeRow, attributeValueOf } from './summary-filter.js'

/**
 * A run row's summary columns as SQLite and Postgres give them (Postgres drivers return bigint
 * columns as strings: they may exceed 2^53; ours never do).
 */
export interface SummaryRow {
  run_no?: string | number
  run_id: string
  status: RunSummary['status']
  kind: string
  definition_name: string
  definition_version: string
  created_at: string | number
  updated_at: string | number
  next_deadline_at: string | number | null
}

export function rowToSummary(row: SummaryRow): RunSummary {
  return {
    runId: row.run_id,
    status: row.status,
    kind: row.kind,
    definitionName: row.definition_name,
    definitionVersion: row.definition_version,
    createdAt: Number(row.created_at),
    updatedAt: Number(row.updated_at),
    nextDeadlineAt: row.next_deadline_at === null ? null : Number(row.next_deadline_at),
  }
}

/** Puts each attribute row on its run's summary (`runNos[i]` is `summaries[i]`'s run). */
export function attachAttributes(
  summaries: RunSummary[],
  runNos: readonly number[],
  rows: readonly AttributeRow[],
): RunSummary[] {
  const byRunNo = new Map(runNos.map((runNo, i) => [runNo, summaries[i]]))
  for (const row of rows) {
    const summary = byRunNo.get(Number(row.run_no))
    if (summary) (summary.attributes ??= {})[row.name] = attributeValueOf(row)
  }
  return summaries
}
