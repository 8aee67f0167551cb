// The claim port across real processes: two claimants on one SQLite file, and on one Postgres
// schema, claim the same names over and over on the wall clock. Never are two owners granted
// one name for overlapping times, each epoch has one owner, and each take-over bumps the epoch
// by one. Real child processes, real time; the figures print as a SCORE line.
import { spawn } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { sqliteStore } from 'skein/sqlite'
import { describe, expect, it } from 'vitest'
import { childWithin } from '../support/children.js'
import { freshPostgresStore, postgresAvailable, testSchemas } from '../support/postgres.js'

const CHILD = join(import.meta.dirname, 'claim-child.ts')
const NAMES = 6
const LEASE_MS = 40
const RUN_MS = 3000

interface Grant {
  name: string
  owner: string
  epoch: number
  from: number
  to: number
}

function claimant(spec: string, owner: string): Promise<{ grants: Grant[]; refused: number }> {
  const proc = spawn(
    process.execPath,
    [
      '--conditions=skein-source',
      '--import',
      'tsx',
      CHILD,
      spec,
      owner,
      String(NAMES),
      String(LEASE_MS),
      String(RUN_MS),
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  )
  let out = ''
  let err = ''
  proc.stdout.on('data', (d) => (out += d))
  proc.stderr.on('data', (d) => (err += d))
  const done = new Promise<{ grants: Grant[]; refused: number }>((resolve, reject) =>
    proc.on('exit', (code) => {
      if (code !== 0) reject(new Error(`claimant ${owner} exited ${code}: ${err}`))
      else resolve(JSON.parse(out))
    }),
  )
  const watched = { name: `claimant ${owner}`, proc, output: () => `${out}\n${err}` }
  return childWithin(`claimant ${owner} to finish`, watched, done, 40_000)
}

/** Races two claimant processes on `spec`; asserts the claim port's promises and scores them. */
async function race(label: string, spec: string) {
  const results = await Promise.all([claimant(spec, 'A'), claimant(spec, 'B')])
  const grants = results.flatMap((r) => r.grants)
  const refused = results.reduce((n, r) => n + r.refused, 0)
  let takeovers = 0
  let overlaps = 0
  for (let i = 0; i < NAMES; i++) {
    const mine = grants.filter((g) => g.name === `race:${i}`).sort((x, y) => x.epoch - y.epoch)
    // One owner per epoch; epochs run 1, 2, 3, … (a take-over is the stored epoch + 1).
    const owners = new Map<number, string>()
    for (const g of mine) {
      expect(owners.get(g.epoch) ?? g.owner, `${g.name} epoch ${g.epoch}`).toBe(g.owner)
      owners.set(g.epoch, g.owner)
    }
    const epochs = [...owners.keys()]
    expect(epochs).toEqual(Array.from({ length: epochs.length }, (_, k) => k + 1))
    takeovers += epochs.length - 1
    // Never two owners holding the name at once.
    for (const x of mine) {
      for (const y of mine) {
        if (x.owner !== y.owner && x.from < y.to && y.from < x.to) overlaps++
      }
    }
  }
  const byOwner = (o: string) => new Set(grants.filter((g) => g.owner === o).map((g) => g.epoch))
  console.log(
    `SCORE claim-race-${label} processes=2 names=${NAMES} grants=${grants.length} takeovers=${takeovers} refused=${refused} overlaps=${overlaps}`,
  )
  expect(overlaps).toBe(0)
  // Both processes won names, lost them and took them over: the race was real.
  expect(byOwner('A').size).toBeGreaterThan(0)
  expect(byOwner('B').size).toBeGreaterThan(0)
  expect(takeovers).toBeGreaterThan(NAMES)
  expect(refused).toBeGreaterThan(0)
}

describe('the claim port across two processes', () => {
  it('one SQLite file: never two owners at once, each take-over the next epoch', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'skein-claim-race-'))
    try {
      const path = join(dir, 'claims.db')
      // Created (and migrated) once, before the claimants race to open it.
      await sqliteStore({ path }).close()
      await race('sqlite', `sqlite:${path}`)
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  }, 60_000)

  if (postgresAvailable('claim-race')) {
    const schemas = testSchemas('claim_race')
    it('one Postgres schema: never two owners at once, each take-over the next epoch', async () => {
      const store = freshPostgresStore(schemas)
      await store.ready()
      await store.close()
      await race('postgres', `postgres:${store.schema}`)
    }, 60_000)
  }
})
