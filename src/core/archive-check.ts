import { ARCHIVE_FORMAT, type ArchivedRun } from './archive-types.js'
import { InvalidRequestError } from './errors.js'

/**
 * The run, if it is whole: a known format, its events those of `runId`, numbered `head`
 * through `tail` without a gap, and a snapshot at `head - 1` when the log starts past 1 (a log
 * trimmed to nothing has no event: its head is `tail + 1`, its snapshot at the tail).
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
  if (!Array.isArray(run.events)) fail('no events')
  if (!Number.isInteger(run.head) || run.head < 1) fail('head must be a seq ≥ 1')
  // A log trimmed to nothing (its snapshot covers its tail) holds no event; a whole log does.
  if (run.events.length === 0 && run.head === 1) fail('no events')
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
  if (run.keys !== undefined) {
    if (!Array.isArray(run.keys)) fail('keys must be a list')
    run.keys.forEach((k, i) => {
      if (typeof k?.key !== 'string' || k.key === '') fail(`key ${i + 1} has no key`)
      if (!Number.isInteger(k.seq) || k.seq < 1 || k.seq > run.tail) {
        fail(`key ${i + 1} (${k.key}) has seq ${k.seq}, not one of the run's (1 to ${run.tail})`)
      }
    })
  }
  return { ...run, snapshot: run.snapshot ?? null }
}
