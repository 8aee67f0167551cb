import { gunzipSync, gzipSync } from 'node:zlib'
import { checkArchivedRun } from '../core/archive-check.js'
import type { ArchivedRun } from '../core/archive-types.js'
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
