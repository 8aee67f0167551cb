import { spawn } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import { sqliteStore } from 'skein/sqlite'
import { afterAll, describe, expect, it } from 'vitest'
import { appendFinishedRuns } from '../support/finished-runs.js'

// kill -9 during a retention sweep (docs/data-lifecycle.md): every run is there whole or gone
// whole, and each gone run left exactly its deletion record.

const dir = mkdtempSync(join(tmpdir(), 'skein-sweep-kill-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))
const RUNS = 3000
const EVENTS = 4

describe('a retention sweep killed mid-way', () => {
  it('leaves each run whole or gone, never half-deleted', async () => {
    const path = join(dir, 'runs.db')
    const store = sqliteStore({ path })
    await appendFinishedRuns(store, RUNS, EVENTS)
    await store.close()

    const child = spawn(
      process.execPath,
      [
        '--conditions=skein-source',
        '--import',
        'tsx',
        join(import.meta.dirname, 'sweep-child.ts'),
        path,
      ],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    )
    let out = ''
    let err = ''
    child.stderr.on('data', (d) => (err += d))
    const exited = new Promise((resolve) => child.on('exit', resolve))
    // Killed after a few batches: the sweep is in the middle of its work.
    await new Promise<void>((resolve, reject) => {
      child.stdout.on('data', (d) => {
        out += d
        if ((out.match(/batch 50/g) ?? []).length >= 5) resolve()
      })
      void exited.then(() => reject(new Error(`child exited first: ${err}`)))
    })
    child.kill('SIGKILL')
    await exited

    const db = new Database(path)
    try {
      const runs = db.prepare('SELECT run_no, run_id, tail FROM skein_runs').all() as Array<{
        run_no: number
        run_id: string
        tail: number
      }>
      const events = new Map(
        (
          db
            .prepare('SELECT run_no, count(*) AS n FROM skein_events GROUP BY run_no')
            .all() as Array<{ run_no: number; n: number }>
        ).map((r) => [r.run_no, r.n]),
      )
      const deleted = db.prepare('SELECT run_id FROM skein_deletions').pluck().all() as string[]
      // Some, not all: the kill came mid-sweep.
      expect(runs.length).toBeGreaterThan(0)
      expect(runs.length).toBeLessThan(RUNS)
      // Whole: every remaining run has all its events; gone: no event without its run.
      for (const run of runs) expect(events.get(run.run_no), run.run_id).toBe(EVENTS)
      expect(events.size).toBe(runs.length)
      // The records that remain (older ones are pruned) name only runs that are gone.
      const left = new Set(runs.map((r) => r.run_id))
      expect(deleted.filter((id) => left.has(id))).toEqual([])
      expect(db.prepare('PRAGMA integrity_check').pluck().get()).toBe('ok')
      console.log(
        `SCORE retention-kill9 store=sqlite runs=${RUNS} whole=${runs.length} gone=${RUNS - runs.length} half_deleted=0`,
      )
    } finally {
      db.close()
    }
  }, 120_000)
})
