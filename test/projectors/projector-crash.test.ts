import { spawn } from 'node:child_process'
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { indexEvent, type RunIndexEntry } from 'skein'
import { sqliteRunIndex, sqliteStore } from 'skein/sqlite'
import { afterAll, expect, it } from 'vitest'
import { childWithin } from '../support/children.js'
import { seeded } from './crash-workload.js'

// The proof of delivery (docs/projectors.md): a child process runs a workload with two projectors (a
// recorder and the SQLite run index) and is SIGKILLed at random moments, again and again; a
// last child drains. Every committed event must have reached the recorder at least once, in
// seq order per run (a batch never starts past what the run had before), and the index must
// equal a fold of the logs.

const CYCLES = Number(process.env.SKEIN_PROJECTOR_CRASH_CYCLES ?? 50)
const SEED = Number(process.env.SKEIN_SEED ?? 22)
const MAX_WORK_MS = 300

const dir = mkdtempSync(join(tmpdir(), 'skein-projector-crash-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))
const child = join(import.meta.dirname, 'crash-child.ts')
// Each try on files of its own: a retried test must not find the first try's runs and records.
let tries = 0

function spawnChild(dbPath: string, recordPath: string, mode: 'work' | 'drain', cycle: number) {
  const proc = spawn(
    process.execPath,
    [
      '--conditions=skein-source',
      '--import',
      'tsx',
      child,
      dbPath,
      recordPath,
      mode,
      String(SEED + cycle),
      String(cycle),
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  )
  let out = ''
  let err = ''
  proc.stderr.on('data', (d) => (err += d))
  const exit = new Promise<number | null>((resolve) => proc.on('exit', (code) => resolve(code)))
  const said = (word: string) =>
    new Promise<boolean>((resolve) => {
      proc.stdout.on('data', (d) => {
        out += d
        if (out.includes(`${word}\n`)) resolve(true)
      })
      void exit.then(() => resolve(out.includes(`${word}\n`)))
    })
  return {
    name: `${mode} child ${cycle}`,
    proc,
    ready: said('ready'),
    drained: said('drained'),
    exit,
    err: () => err,
    output: () => `${out}\n${err}`,
  }
}

it(`every event reaches the projector in order after ${CYCLES} SIGKILLs, and the index equals a fold of the logs`, async () => {
  const dbPath = join(dir, `runs-${++tries}.db`)
  const recordPath = join(dir, `record-${tries}.log`)
  const random = seeded(SEED)
  for (let cycle = 0; cycle < CYCLES; cycle++) {
    const c = spawnChild(dbPath, recordPath, 'work', cycle)
    if (!(await childWithin(`${c.name} ready`, c, c.ready, 60_000)))
      throw new Error(`child ${cycle} never got ready: ${c.err()}`)
    await sleep(Math.floor(random() * MAX_WORK_MS))
    c.proc.kill('SIGKILL')
    await c.exit
  }
  const last = spawnChild(dbPath, recordPath, 'drain', CYCLES)
  if (!(await childWithin('the drain', last, last.drained, 240_000)))
    throw new Error(`drain failed: ${last.err()}`)
  expect(await last.exit).toBe(0)

  // What the recorder saw, by run, in the order it saw it.
  const batches = new Map<string, Array<[number, number]>>()
  if (existsSync(recordPath)) {
    for (const line of readFileSync(recordPath, 'utf8').split('\n')) {
      if (!line) continue
      const [runId, first, lastSeq] = line.split(' ')
      const list = batches.get(runId) ?? []
      list.push([Number(first), Number(lastSeq)])
      batches.set(runId, list)
    }
  }
  const store = sqliteStore({ path: dbPath })
  const index = sqliteRunIndex({ path: dbPath })
  let missing = 0
  let outOfOrder = 0
  let events = 0
  let redelivered = 0
  let indexMismatches = 0
  try {
    const runs = await store.listRuns()
    for (const runId of runs) {
      const log = await store.read(runId)
      events += log.length
      let seen = 0
      for (const [first, lastSeq] of batches.get(runId) ?? []) {
        if (first > seen + 1) outOfOrder++
        if (first <= seen) redelivered += Math.min(seen, lastSeq) - first + 1
        seen = Math.max(seen, lastSeq)
      }
      missing += Math.max(0, log.length - seen)
      let folded: RunIndexEntry | undefined
      for (const event of log) folded = indexEvent(folded, event)
      const indexed = await index.get(runId)
      const meta = (await store.listSummaries({ limit: 1000, runIdPrefix: runId })).runs.find(
        (s) => s.runId === runId,
      )
      if (JSON.stringify(indexed) !== JSON.stringify(folded) || meta?.status !== indexed?.status) {
        if (indexMismatches++ < 5) {
          console.warn('index mismatch', JSON.stringify({ indexed, folded, summary: meta?.status }))
        }
      }
    }
    console.log(
      `SCORE projector-crash cycles=${CYCLES} runs=${runs.length} events=${events} missing=${missing} out_of_order=${outOfOrder} redelivered=${redelivered} index_mismatches=${indexMismatches} seed=${SEED}`,
    )
    expect(runs.length).toBeGreaterThan(CYCLES)
    expect(missing).toBe(0)
    expect(outOfOrder).toBe(0)
    expect(indexMismatches).toBe(0)
  } finally {
    await index.close?.()
    await store.close()
  }
}, 600_000)
