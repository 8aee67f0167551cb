import { createHash } from 'node:crypto'
import { mkdir, open, readdir, readFile, rename, rm, stat } from 'node:fs/promises'
import { join } from 'node:path'
import type { ArchivedRun, ArchiveSink } from '../core/archive-types.js'
import { InvalidRequestError } from '../core/errors.js'
import { decodeArchivedRun, encodeArchivedRun } from './archive-format.js'

export interface JsonlArchiveOptions {
  /** The directory archives go to (created when missing). */
  dir: string
  /** Files written at once (default 16). */
  concurrency?: number
}

const PLAIN = /^[A-Za-z0-9_-]{1,120}$/

/** A file-name-safe token: plain text as is, anything else a `~` and its SHA-256 (hex). */
const token = (text: string) =>
  PLAIN.test(text) ? text : `~${createHash('sha256').update(text).digest('hex').slice(0, 40)}`

/**
 * Where a run's archive lives under `dir`: `<day the run started>/<runId>.<first event id>
 * .jsonl.gz`. The name is the same each time this run is archived (a sweep resumed after a
 * crash rewrites the same file, never a second copy), and a later run that reuses the id gets
 * its own file (its first event differs). Days let an operator expire archives by age. A log
 * trimmed to nothing is `<day of its snapshot>/<runId>.snapshot-<seq>-<snapshot time>.jsonl.gz`.
 */
export function archivePath(dir: string, run: ArchivedRun): string {
  const first = run.events[0]
  // A log trimmed to nothing is named by its snapshot (seq and time), as stable as an event.
  const snapshot = run.snapshot!
  const ts = first?.ts ?? snapshot.createdAt
  const day = new Date(ts).toISOString().slice(0, 10)
  const incarnation = first ? token(first.id) : `snapshot-${snapshot.seq}-${snapshot.createdAt}`
  return join(dir, day, `${token(run.runId)}.${incarnation}.jsonl.gz`)
}

/** Writes the file and makes it durable: a temporary file, fsync, rename over the final name. */
async function writeDurably(path: string, bytes: Buffer): Promise<void> {
  const temporary = `${path}.${process.pid}.tmp`
  const file = await open(temporary, 'w')
  try {
    await file.writeFile(bytes)
    await file.sync()
  } finally {
    await file.close()
  }
  await rename(temporary, path)
}

/**
 * Removes the temporary files of writes another process started in `day` and never renamed (it
 * was killed): their runs were not deleted, so they are archived again whole. A write of this
 * process (its pid in the name) is never touched; a live writer elsewhere whose file goes
 * fails its rename, so its runs stay in the store for the next sweep.
 */
async function removeLeftovers(day: string): Promise<void> {
  const mine = `.${process.pid}.tmp`
  for (const name of await readdir(day)) {
    if (name.endsWith('.tmp') && !name.endsWith(mine)) await rm(join(day, name), { force: true })
  }
}

/** A directory's entries made durable (the renames into it survive a power cut). */
async function syncDirectory(dir: string): Promise<void> {
  const handle = await open(dir, 'r')
  try {
    await handle.sync()
  } finally {
    await handle.close()
  }
}

/**
 * The archive sink that writes one gzip JSONL file per run (docs/data-lifecycle.md,
 * "Archives"): `write` resolves once every file and its directory entry is on disk.
 *
 * @example
 * createEngine({ store, retention: { finishedAfterMs: 7 * 86_400_000,
 *   archive: jsonlArchive({ dir: '/var/skein/archive' }) } })
 */
export function jsonlArchive(options: JsonlArchiveOptions): ArchiveSink {
  if (typeof options?.dir !== 'string' || options.dir === '') {
    throw new InvalidRequestError('jsonlArchive: dir must name a directory')
  }
  const { dir } = options
  const concurrency = options.concurrency ?? 16
  /** Day directories this sink has cleaned of leftovers (once each). */
  const cleaned = new Set<string>()
  return {
    name: `jsonl:${dir}`,
    emptyLogs: true,
    async write(runs) {
      const days = new Set<string>()
      const pending = runs.map((run) => ({ run, path: archivePath(dir, run) }))
      for (const { path } of pending) days.add(join(path, '..'))
      for (const day of days) {
        await mkdir(day, { recursive: true })
        if (!cleaned.has(day)) {
          await removeLeftovers(day)
          cleaned.add(day)
        }
      }
      let next = 0
      const worker = async () => {
        while (next < pending.length) {
          const { run, path } = pending[next++]
          await writeDurably(path, encodeArchivedRun(run))
        }
      }
      await Promise.all(Array.from({ length: Math.min(concurrency, pending.length) }, worker))
      for (const day of days) await syncDirectory(day)
      await syncDirectory(dir)
    },
  }
}

/**
 * Every archived run under `path` (a `.jsonl.gz` file, or a directory searched through), each
 * checked whole; a file that is not is an INVALID_REQUEST naming it.
 */
export async function* readArchive(path: string): AsyncGenerator<ArchivedRun> {
  const info = await stat(path).catch(() => null)
  if (!info) throw new InvalidRequestError(`archive ${path} not found`)
  if (info.isFile()) {
    yield decodeArchivedRun(await readFile(path), path)
    return
  }
  const entries = (await readdir(path, { withFileTypes: true })).sort((a, b) =>
    a.name.localeCompare(b.name),
  )
  for (const entry of entries) {
    const inner = join(path, entry.name)
    if (entry.isDirectory()) yield* readArchive(inner)
    else if (entry.name.endsWith('.jsonl.gz')) yield decodeArchivedRun(await readFile(inner), inner)
  }
}
