import { spawn } from 'node:child_process'
import { mkdtempSync, readdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import { type ArchivedRun, readArchive } from 'skein'
import { sqliteStore } from 'skein/sqlite'
import { makeEnvelopes } from 'skein/testing'
import { afterAll, describe, expect, it } from 'vitest'
import { childWithin, exitWithin } from '../support/children.js'
import { appendFinishedRuns } from '../support/finished-runs.js'

// kill -9 during an archiving retention sweep (docs/data-lifecycle.md, "Archives"): every run
// is in the store whole or in the archive whole (never neither), and a second process that
// finishes the sweep leaves exactly one archived copy of each run, equal to the original.

const dir = mkdtempSync(join(tmpdir(), 'skein-archive-kill-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))
const RUNS = 2000
const EVENTS = 4
// Each try on a store and an archive of its own: a retried test must not find the first try's.
let tries = 0

function child(db: string, archive: string, mode: 'kill' | 'finish') {
  const process_ = spawn(
    process.execPath,
    [
      '--conditions=skein-source',
      '--import',
      'tsx',
      join(import.meta.dirname, 'archive-sweep-child.ts'),
      db,
      archive,
      mode,
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  )
  let out = ''
  let err = ''
  process_.stdout.on('data', (d) => (out += d))
  process_.stderr.on('data', (d) => (err += d))
  const exited = new Promise<number | null>((resolve) => process_.on('exit', resolve))
  return {
    name: `the ${mode} child`,
    proc: process_,
    process_,
    exited,
    out: () => out,
    err: () => err,
    output: () => `${out}\n${err}`,
  }
}

async function archivedRuns(archive: string): Promise<Map<string, ArchivedRun>> {
  const runs = new Map<string, ArchivedRun>()
  for await (const run of readArchive(archive)) {
    expect(runs.has(run.runId), `${run.runId} archived twice`).toBe(false)
    runs.set(run.runId, run)
  }
  return runs
}

describe('an archiving retention sweep killed mid-way', () => {
  it('loses no run, and the sweep resumed archives each run once', async () => {
    const db = join(dir, `runs-${++tries}.db`)
    const archive = join(dir, `archive-${tries}`)
    const store = sqliteStore({ path: db })
    await appendFinishedRuns(store, RUNS, EVENTS)
    await store.close()

    const first = child(db, archive, 'kill')
    await childWithin(
      'the sweep to hold',
      first,
      new Promise<void>((resolve, reject) => {
        first.process_.stdout.on('data', () => {
          if (first.out().includes('held')) resolve()
        })
        void first.exited.then(() => reject(new Error(`child exited first: ${first.err()}`)))
      }),
      90_000,
    )
    first.process_.kill('SIGKILL')
    await first.exited

    const left = new Database(db)
    const inStore = new Map(
      (
        left
          .prepare(
            'SELECT r.run_id AS id, count(e.seq) AS n FROM skein_runs r LEFT JOIN skein_events e ON e.run_no = r.run_no GROUP BY r.run_no',
          )
          .all() as Array<{ id: string; n: number }>
      ).map((r) => [r.id, r.n]),
    )
    left.close()
    const archivedAtKill = await archivedRuns(archive)
    expect(inStore.size).toBeGreaterThan(0)
    expect(inStore.size).toBeLessThan(RUNS)
    let lost = 0
    for (let i = 0; i < RUNS; i++) {
      const runId = `old-${i}`
      const whole = inStore.get(runId) === EVENTS || archivedAtKill.get(runId)?.tail === EVENTS
      if (!whole) lost++
    }
    expect(lost).toBe(0)
    // Archived but not yet deleted when killed: the crash between the two.
    const both = [...inStore.keys()].filter((id) => archivedAtKill.has(id)).length
    expect(both).toBe(50)

    const second = child(db, archive, 'finish')
    expect((await exitWithin(second, 90_000)).code, second.err()).toBe(0)
    const archived = await archivedRuns(archive)
    expect(archived.size).toBe(RUNS)
    for (const [runId, run] of archived) {
      expect(run.events).toEqual(makeEnvelopes(runId, 1, EVENTS))
    }
    const days = readdirSync(archive)
    const files = days.flatMap((day) => readdirSync(join(archive, day)))
    expect(files.filter((f) => f.endsWith('.jsonl.gz')).length).toBe(RUNS)
    console.log(
      `SCORE archive-kill9 store=sqlite runs=${RUNS} in_store_at_kill=${inStore.size} archived_at_kill=${archivedAtKill.size} archived_not_deleted=${both} lost=${lost} archived_after_resume=${archived.size} duplicates=0`,
    )
  }, 180_000)
})
