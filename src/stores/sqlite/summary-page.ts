import type { StoreSummaryQuery, SummaryPage } from '../../core/ports.js'
import { decodeSummaryCursor, encodeSummaryCursor } from '../../core/summaries.js'
import {
  type AttributeRow,
  pageAttributesSql,
  type SummaryTables,
  summaryPageSql,
} from '../shared/summary-filter.js'
import { attachAttributes, rowToSummary, type SummaryRow } from '../shared/summary-rows.js'
import type { SqliteDatabase, SqliteStatement } from './driver.js'
import { META_COLUMNS } from './statements.js'

type Row = SummaryRow & { run_no: number }

const TABLES: SummaryTables = { runs: 'skein_runs', attributes: 'skein_run_attributes' }

/**
 * One page of summaries through an index (`summaryPageSql`): the rowid (`run_no`, creation
 * order) without a filter, `skein_runs_status` with a status, `skein_runs_definition` with a
 * definition, `skein_run_attributes_value` with an attribute; a prefix is a range on the run
 * id. The page's attributes come in one more read by run key. Each shape of query is prepared
 * once per connection.
 */
export function summaryPages(db: SqliteDatabase) {
  const prepared = new Map<string, SqliteStatement<unknown[], unknown>>()
  const all = <R>(sql: string, params: unknown[]): R[] => {
    let statement = prepared.get(sql)
    if (!statement) {
      statement = db.prepare<unknown[], unknown>(sql)
      prepared.set(sql, statement)
    }
    return statement.all(...params) as R[]
  }
  return (query: StoreSummaryQuery): SummaryPage => {
    const cursor = query.cursor === undefined ? undefined : decodeSummaryCursor(query.cursor)
    const { sql, params } = summaryPageSql(TABLES, META_COLUMNS, query, cursor, 'sqlite')
    const rows = all<Row>(sql, params)
    const more = rows.length > query.limit
    if (more) rows.pop()
    const runNos = rows.map((row) => row.run_no)
    const runs = rows.map(rowToSummary)
    if (runNos.length > 0) {
      const attributes = pageAttributesSql(TABLES, runNos, 'sqlite')
      attachAttributes(runs, runNos, all<AttributeRow>(attributes.sql, attributes.params))
    }
    return {
      runs,
      nextCursor: more ? encodeSummaryCursor(rows[rows.length - 1].run_no) : null,
    }
  }
}
