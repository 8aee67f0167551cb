// Golden logs: recorded runs kept as files, each beside what it folded to when it was recorded.
// Replaying them under the current code proves old logs still fold the same way.
//
// Layout of a directory (subdirectories are searched too):
//   <name>.jsonl          the log, one EventEnvelope per line, in seq order
//   <name>.expected.json  what it folded to when recorded (a ReplayedLog)
//   <name>.snapshot.json  optional: the snapshot a trimmed log continues from

import { mkdir, readdir, readFile, writeFile } from 'node:fs/promises'
import { dirname, join, relative } from 'node:path'
import type { EventEnvelope } from '../core/envelope.js'
import { toErrorInfo } from '../core/errors.js'
import { canonicalJson } from '../core/json.js'
import type { Module } from '../core/module.js'
import type { Snapshot } from '../core/ports.js'
import { type ReplayedLog, replayLog } from './replay-log.js'

const LOG = '.jsonl'
const EXPECTED = '.expected.json'
const SNAPSHOT = '.snapshot.json'

/** One way a golden log no longer replays as recorded. */
export interface GoldenMismatch {
  /** The log's name: its path under the directory, without `.jsonl`. */
  name: string
  /** Where the replay differs (`state.threads.thr_1.status`), or `replay` when it threw. */
  path: string
  recorded: unknown
  replayed: unknown
  message: string
}

export interface GoldenReport {
  /** Logs replayed. */
  logs: number
  mismatches: GoldenMismatch[]
}

/**
 * Replays every golden log under `dir` with `modules` and compares each with what it folded to
 * when it was recorded. A mismatch means the current code folds an old log differently.
 *
 * @example
 * const report = await checkGoldenLogs('test/fixtures/logs', modules)
 * if (report.mismatches.length > 0) throw new Error(report.mismatches[0].message)
 */
export async function checkGoldenLogs(
  dir: string,
  modules: readonly Module[],
): Promise<GoldenReport> {
  const names = await logNames(dir)
  const mismatches: GoldenMismatch[] = []
  for (const name of names) {
    const base = join(dir, name)
    const events = parseLog(await readFile(base + LOG, 'utf8'), base + LOG)
    const snapshot = await readJsonIfAny<Snapshot>(base + SNAPSHOT)
    const expected = await readJsonIfAny<ReplayedLog>(base + EXPECTED)
    if (!expected) {
      mismatches.push({
        name,
        path: 'expected',
        recorded: undefined,
        replayed: undefined,
        message: `golden log ${name}: no ${name}${EXPECTED} beside it; record it with recordGoldenLog`,
      })
      continue
    }
    let replayed: ReplayedLog
    try {
      replayed = replayLog(modules, events, { snapshot })
    } catch (error) {
      const info = toErrorInfo(error)
      mismatches.push({
        name,
        path: 'replay',
        recorded: 'a fold',
        replayed: info,
        message: `golden log ${name} no longer folds: ${info.code}: ${info.message}`,
      })
      continue
    }
    const difference = firstDifference(expected, withoutNewProjections(replayed, expected), '')
    if (difference) {
      mismatches.push({
        name,
        ...difference,
        message: `golden log ${name}: ${difference.path} replays to ${show(difference.replayed)} but was recorded as ${show(difference.recorded)}. The current code folds this old log differently: keep the old behaviour for logs recorded this way (decide by the recorded protocol version: docs/decisions.md, "The log protocol version"); re-record a golden log only when what it records was wrong, never to accept a change of how old logs replay`,
      })
    }
  }
  return { logs: names.length, mismatches }
}

/**
 * `replayed` without the projections registered after the log was recorded: a new projection is
 * new knowledge about an old log, not a change of how it folds (a removed one still mismatches).
 */
function withoutNewProjections(replayed: ReplayedLog, expected: ReplayedLog): ReplayedLog {
  const projections: ReplayedLog['projections'] = {}
  for (const name in replayed.projections) {
    if (name in expected.projections) projections[name] = replayed.projections[name]
  }
  return { ...replayed, projections }
}

/**
 * Writes a golden log: the events (and the snapshot a trimmed log continues from) and what they
 * fold to now, under `dir/<name>`. Returns that expectation.
 */
export async function recordGoldenLog(
  dir: string,
  name: string,
  modules: readonly Module[],
  log: { events: readonly EventEnvelope[]; snapshot?: Snapshot },
): Promise<ReplayedLog> {
  const expected = replayLog(modules, log.events, { snapshot: log.snapshot })
  const base = join(dir, name)
  await mkdir(dirname(base), { recursive: true })
  await writeFile(base + LOG, log.events.map((e) => JSON.stringify(e)).join('\n') + '\n')
  if (log.snapshot) await writeFile(base + SNAPSHOT, `${JSON.stringify(log.snapshot, null, 2)}\n`)
  await writeFile(base + EXPECTED, `${JSON.stringify(expected, null, 2)}\n`)
  return expected
}

/** Reads a JSON-lines log (one EventEnvelope per line; blank lines ignored). */
export function parseLog(text: string, source = 'log'): EventEnvelope[] {
  const events: EventEnvelope[] = []
  const lines = text.split('\n')
  for (let i = 0; i < lines.length; i++) {
    if (lines[i].trim() === '') continue
    try {
      events.push(JSON.parse(lines[i]))
    } catch (error) {
      throw new SyntaxError(`${source}:${i + 1}: not a JSON event: ${(error as Error).message}`)
    }
  }
  return events
}

async function logNames(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { recursive: true, withFileTypes: true })
  return entries
    .filter((entry) => entry.isFile() && entry.name.endsWith(LOG))
    .map((entry) => relative(dir, join(entry.parentPath, entry.name)).slice(0, -LOG.length))
    .sort()
}

async function readJsonIfAny<T>(path: string): Promise<T | undefined> {
  let text: string
  try {
    text = await readFile(path, 'utf8')
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined
    throw error
  }
  return JSON.parse(text) as T
}

/** The first place two JSON values differ (object key order ignored), or null. */
function firstDifference(
  recorded: unknown,
  replayed: unknown,
  path: string,
): { path: string; recorded: unknown; replayed: unknown } | null {
  if (canonicalJson(recorded) === canonicalJson(replayed)) return null
  const bothObjects =
    recorded !== null &&
    replayed !== null &&
    typeof recorded === 'object' &&
    typeof replayed === 'object' &&
    Array.isArray(recorded) === Array.isArray(replayed)
  if (bothObjects) {
    const a = recorded as Record<string, unknown>
    const b = replayed as Record<string, unknown>
    const keys = [...new Set([...Object.keys(a), ...Object.keys(b)])]
    for (const key of keys) {
      const found = firstDifference(a[key], b[key], path ? `${path}.${key}` : key)
      if (found) return found
    }
  }
  return { path: path || '(whole)', recorded, replayed }
}

const show = (value: unknown): string => {
  const text = value === undefined ? 'nothing' : JSON.stringify(value)
  return text.length > 200 ? `${text.slice(0, 200)}…` : text
}
