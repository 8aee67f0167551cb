import type { StoreSummaryQuery, SummaryPage } from '../../core/ports.js'
import { decodeSummaryCursor, encodeSummaryCursor } from '../../core/summaries.js'
import { summaryPageSql } from '../shared/summary-filter.js'
import { rowToSummary, type SummaryRow } from '../shared/summary-rows.js'
import type { SqliteDatabase, SqliteStatement } from './driver.js'
import { META_COLUMNS } from './statements.js'

type Row = SummaryRow & { run_no: number }

/**
 * One page of summaries through an index (`summaryPageSql`): the rowid (`run_no`, creation
 * order) without a filter, `skein_runs_status` with a status, `skein_runs_definition` with a
 * definition; a prefix is a range on the run id. Each shape of query is prepared once per
 * connection.
 */
export function summaryPages(db: SqliteDatabase) {
  const prepared = new Map<string, SqliteStatement<unknown[], Row>>()
  return (query: StoreSummaryQuery): SummaryPage => {
    const cursor = query.cursor === undefined ? undefined : decodeSummaryCursor(query.cursor)
    const { sql, params } = summaryPageSql('skein_runs', META_COLUMNS, query, cursor, 'sqlite')
    let statement = prepared.get(sql)
    if (!statement) {
      statement = db.prepare<unknown[], Row>(sql)
      prepared.set(sql, statement)
    }
    const rows = statement.all(...params)
    if (rows.length <= query.limit) return { runs: rows.map(rowToSummary), nextCursor: null }
    rows.pop()
    return {
      runs: rows.map(rowToSummary),
      nextCursor: encodeSummaryCursor(rows[rows.length - 1].run_no),
    }
  }
}
