import { gunzipSync, gzipSync } from 'node:zlib'
import { ARCHIVE_FORMAT, type ArchivedRun } from '../core/archive-types.js'
import type { EventEnvelope } from '../core/envelope.js'
import { InvalidRequestError } from '../core/errors.js'

/**
 * An archived run as a gzip JSONL document (docs/data-lifecycle.md, "Archives"): line 1 is the
 * header (`skeinArchive`: the format, and every field but the events), then one event per line
 * in seq order.
 */
export function encodeArchivedRun(run: ArchivedRun): Buffer {
  const { events, format, ...header } = run
  const lines = [JSON.stringify({ skeinArchive: format, ...header })]
  for (const event of events) lines.push(JSON.stringify(event))
  return gzipSync(`${lines.join('\n')}\n`)
}

/** Reads one document back, checked whole (`checkArchivedRun`); `source` names it in errors. */
export function decodeArchivedRun(bytes: Buffer, source: string): ArchivedRun {
  let lines: string[]
  try {
    lines = gunzipSync(bytes).toString('utf8').split('\n').filter(Boolean)
  } catch (error) {
    throw new InvalidRequestError(`${source} is not a gzip archive: ${(error as Error).message}`)
  }
  const parse = (line: string, n: number) => {
    try {
      return JSON.parse(line)
    } catch {
      throw new InvalidRequestError(`${source}: line ${n + 1} is not JSON`)
    }
  }
  const { skeinArchive, ...header } = parse(lines[0] ?? '{}', 0)
  const events = lines.slice(1).map((line, i) => parse(line, i + 1) as EventEnvelope)
  return checkArchivedRun({ format: skeinArchive, ...header, events }, source)
}

/**
 * The run, if it is whole: a known format, its events those of `runId`, numbered `head`
 * through `tail` without a gap, and a snapshot at `head - 1` when the log starts past 1.
 * Otherwise INVALID_REQUEST naming what is wrong (nothing is restored from it).
 */
export function checkArchivedRun(value: unknown, source: string): ArchivedRun {
  const run = value as ArchivedRun
  const fail = (what: string): never => {
    throw new InvalidRequestError(`${source}: ${what}; nothing was restored from it`, {
      source,
    })
  }
  if (run === null || typeof run !== 'object') fail('not an archived run')
  if (typeof run.format !== 'number') fail('no archive format (not a Skein archive)')
  if (run.format > ARCHIVE_FORMAT) {
    fail(`archive format ${run.format} is newer than this Skein reads (${ARCHIVE_FORMAT})`)
  }
  if (typeof run.runId !== 'string' || run.runId === '') fail('no runId')
  if (!Array.isArray(run.events) || run.events.length === 0) fail('no events')
  if (!Number.isInteger(run.head) || run.head < 1) fail('head must be a seq ≥ 1')
  run.events.forEach((event, i) => {
    if (event?.runId !== run.runId) fail(`event ${i + 1} belongs to another run`)
    if (event.seq !== run.head + i) {
      fail(`event ${i + 1} has seq ${event.seq}, expected ${run.head + i} (a gap or a repeat)`)
    }
  })
  if (run.tail !== run.head + run.events.length - 1) {
    fail(`tail ${run.tail} does not match its events (last seq ${run.events.at(-1)?.seq})`)
  }
  if (run.head > 1 && run.snapshot?.seq !== run.head - 1) {
    fail(`the log starts at seq ${run.head} but no snapshot covers seq ${run.head - 1}`)
  }
  return { ...run, snapshot: run.snapshot ?? null }
}
