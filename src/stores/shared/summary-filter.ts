import type { RunAttributeValue, StoreAttributeFilter } from '../../core/attributes.js'
import type { StoreSummaryQuery } from '../../core/ports.js'

/**
 * The largest code point: every id that starts with the prefix sorts at or above the prefix and
 * below `prefix + U+10FFFF` (only an id continuing with that non-character would be missed).
 */
const LAST_CHAR = String.fromCodePoint(0x10ffff)

/** The run table and its attribute table (`skein_run_attributes`), schema-qualified. */
export interface SummaryTables {
  runs: string
  attributes: string
}

type Dialect = 'sqlite' | 'postgres'

/**
 * The SQL of one page of summaries, shared by SQLite and Postgres: every filter of the query as
 * a condition on an indexed column of the run row, the cursor as a range on `run_no` (creation
 * order), `limit + 1` rows to see whether a next page exists. Only filters the query has appear,
 * so the planner sees a statement shaped for them (and each shape is prepared once).
 *
 * With attribute filters the page is driven from the attribute index: the first equality (else
 * the first range) reads `(name, value, run_no)`, so an equality walks one value's runs already
 * in creation order, and each run row is joined by its key; any other attribute filter is an
 * EXISTS on the attribute table's key `(run_no, name)`. SQLite is told the join order (CROSS
 * JOIN); Postgres's planner picks it from the attribute index's selectivity.
 */
export function summaryPageSql(
  tables: SummaryTables,
  columns: string,
  query: StoreSummaryQuery,
  cursor: number | undefined,
  dialect: Dialect,
): { sql: string; params: unknown[] } {
  const placeholder = dialect === 'sqlite' ? () => '?' : (n: number) => `$${n}`
  const params: unknown[] = []
  const p = (value: unknown) => {
    params.push(value)
    return placeholder(params.length)
  }
  const filters = query.attributes ?? []
  const driver = filters.find((f) => f.eq !== undefined) ?? filters[0]
  const where: string[] = []
  const r = driver ? 'r.' : ''
  if (driver) where.push(...attributeConditions('a', driver, dialect, p), 'r.run_no = a.run_no')
  if (query.status === undefined) where.push(`${r}status IS NOT NULL`)
  else if (query.status.length === 1) where.push(`${r}status = ${p(query.status[0])}`)
  else where.push(`${r}status IN (${query.status.map(p).join(', ')})`)
  if (query.definitionName !== undefined) {
    where.push(`${r}definition_name = ${p(query.definitionName)}`)
  }
  if (query.definitionVersion !== undefined) {
    where.push(`${r}definition_version = ${p(query.definitionVersion)}`)
  }
  if (query.runIdPrefix !== undefined) {
    // SQLite compares text by code point, so a prefix is a range of the run id's index; a
    // Postgres database's collation need not, so there it is starts_with.
    where.push(
      dialect === 'sqlite'
        ? `${r}run_id >= ${p(query.runIdPrefix)} AND ${r}run_id < ${p(query.runIdPrefix + LAST_CHAR)}`
        : `starts_with(${r}run_id, ${p(query.runIdPrefix)})`,
    )
  }
  if (query.createdFrom !== undefined) where.push(`${r}created_at >= ${p(query.createdFrom)}`)
  if (query.createdBefore !== undefined) where.push(`${r}created_at < ${p(query.createdBefore)}`)
  if (query.updatedFrom !== undefined) where.push(`${r}updated_at >= ${p(query.updatedFrom)}`)
  if (query.updatedBefore !== undefined) where.push(`${r}updated_at < ${p(query.updatedBefore)}`)
  filters.forEach((filter, i) => {
    if (filter === driver) return
    const b = `b${i}`
    const conditions = attributeConditions(b, filter, dialect, p).join(' AND ')
    where.push(
      `EXISTS (SELECT 1 FROM ${tables.attributes} ${b} WHERE ${b}.run_no = r.run_no AND ${conditions})`,
    )
  })
  const newest = query.order !== 'oldest'
  const order = driver ? 'a.run_no' : 'run_no'
  if (cursor !== undefined) where.push(`${order} ${newest ? '<' : '>'} ${p(cursor)}`)
  const from = driver
    ? `${tables.attributes} a ${dialect === 'sqlite' ? 'CROSS JOIN' : 'JOIN'} ${tables.runs} r ON true`
    : tables.runs
  const selected = driver
    ? `r.run_no, r.run_id, ${columns
        .split(', ')
        .map((c) => `r.${c}`)
        .join(', ')}`
    : `run_no, run_id, ${columns}`
  const sql = `SELECT ${selected} FROM ${from} WHERE ${where.join(' AND ')}
    ORDER BY ${order} ${newest ? 'DESC' : 'ASC'} LIMIT ${p(query.limit + 1)}`
  return { sql, params }
}

/** The conditions of one attribute filter on the attribute table's alias `t`. */
function attributeConditions(
  t: string,
  filter: StoreAttributeFilter,
  dialect: Dialect,
  p: (value: unknown) => string,
): string[] {
  const sample = filter.eq ?? filter.min ?? filter.max
  const column =
    dialect === 'sqlite' ? 'value' : typeof sample === 'string' ? 'str_value' : 'num_value'
  const conditions = [`${t}.name = ${p(filter.name)}`]
  if (filter.eq !== undefined) conditions.push(`${t}.${column} = ${p(storedValue(filter.eq))}`)
  if (filter.min !== undefined) conditions.push(`${t}.${column} >= ${p(filter.min)}`)
  if (filter.max !== undefined) conditions.push(`${t}.${column} <= ${p(filter.max)}`)
  // A range's end binds as the type it is; the stored value must be that type too (SQLite
  // orders every number below every text).
  if (dialect === 'sqlite' && filter.eq === undefined) {
    conditions.push(
      `typeof(${t}.value) ${typeof sample === 'string' ? "= 'text'" : "IN ('integer', 'real')"}`,
    )
  }
  return conditions
}

/** Booleans are stored as 1/0. */
const storedValue = (value: RunAttributeValue): string | number =>
  typeof value === 'boolean' ? (value ? 1 : 0) : value

/** A page's attribute rows: `(run_no, name, value, is_bool)` of the given runs. */
export function pageAttributesSql(
  tables: SummaryTables,
  runNos: readonly number[],
  dialect: Dialect,
): { sql: string; params: unknown[] } {
  if (dialect === 'sqlite') {
    return {
      sql: `SELECT run_no, name, value, is_bool FROM ${tables.attributes}
        WHERE run_no IN (${runNos.map(() => '?').join(', ')})`,
      params: [...runNos],
    }
  }
  return {
    sql: `SELECT run_no, name, coalesce(str_value, num_value::text) AS value, is_bool,
        str_value IS NOT NULL AS is_text
      FROM ${tables.attributes} WHERE run_no = ANY($1::bigint[])`,
    params: [runNos.map(String)],
  }
}

/** A stored attribute row as either database returns it. */
export interface AttributeRow {
  run_no: number | string
  name: string
  value: string | number
  is_bool: number | boolean
  /** Postgres: the value came from `str_value` (else it is a number's text). */
  is_text?: boolean
}

/** The value an attribute row holds, in its type. */
export function attributeValueOf(row: AttributeRow): RunAttributeValue {
  if (row.is_bool === true || row.is_bool === 1) return Number(row.value) === 1
  if (row.is_text === false) return Number(row.value)
  return row.value
}
