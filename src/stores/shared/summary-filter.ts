import type { StoreSummaryQuery } from '../../core/ports.js'

/**
 * The largest code point: every id that starts with the prefix sorts at or above the prefix and
 * below `prefix + U+10FFFF` (only an id continuing with that non-character would be missed).
 */
const LAST_CHAR = String.fromCodePoint(0x10ffff)

/**
 * The SQL of one page of summaries, shared by SQLite and Postgres: every filter of the query as
 * a condition on an indexed column of the run row, the cursor as a range on `run_no` (creation
 * order), `limit + 1` rows to see whether a next page exists. Only filters the query has appear, so the planner sees a statement
 * shaped for them (and each shape is prepared once).
 */
export function summaryPageSql(
  table: string,
  columns: string,
  query: StoreSummaryQuery,
  cursor: number | undefined,
  dialect: 'sqlite' | 'postgres',
): { sql: string; params: unknown[] } {
  const placeholder = dialect === 'sqlite' ? () => '?' : (n: number) => `$${n}`
  const params: unknown[] = []
  const p = (value: unknown) => {
    params.push(value)
    return placeholder(params.length)
  }
  const where: string[] = []
  if (query.status === undefined) where.push('status IS NOT NULL')
  else if (query.status.length === 1) where.push(`status = ${p(query.status[0])}`)
  else where.push(`status IN (${query.status.map(p).join(', ')})`)
  if (query.definitionName !== undefined) where.push(`definition_name = ${p(query.definitionName)}`)
  if (query.definitionVersion !== undefined) {
    where.push(`definition_version = ${p(query.definitionVersion)}`)
  }
  if (query.runIdPrefix !== undefined) {
    // SQLite compares text by code point, so a prefix is a range of the run id's index; a
    // Postgres database's collation need not, so there it is starts_with.
    where.push(
      dialect === 'sqlite'
        ? `run_id >= ${p(query.runIdPrefix)} AND run_id < ${p(query.runIdPrefix + LAST_CHAR)}`
        : `starts_with(run_id, ${p(query.runIdPrefix)})`,
    )
  }
  if (query.createdFrom !== undefined) where.push(`created_at >= ${p(query.createdFrom)}`)
  if (query.createdBefore !== undefined) where.push(`created_at < ${p(query.createdBefore)}`)
  if (query.updatedFrom !== undefined) where.push(`updated_at >= ${p(query.updatedFrom)}`)
  if (query.updatedBefore !== undefined) where.push(`updated_at < ${p(query.updatedBefore)}`)
  const newest = query.order !== 'oldest'
  if (cursor !== undefined) where.push(`run_no ${newest ? '<' : '>'} ${p(cursor)}`)
  const sql = `SELECT run_no, run_id, ${columns} FROM ${table} WHERE ${where.join(' AND ')}
    ORDER BY run_no ${newest ? 'DESC' : 'ASC'} LIMIT ${p(query.limit + 1)}`
  return { sql, params }
}
