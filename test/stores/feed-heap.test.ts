import { spawnSync } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { RECENT_BYTES } from '../../src/stores/sqlite/sqlite-feed.js'
import { freshPath } from '../support/temp-dirs.js'

// The SQLite store keeps its newest commits in memory for the projectors of its process only
// while the feed is watched, and never more than RECENT_BYTES of payload: large events must
// not pile up in the heap of a process that appends them (docs/storage.md, "Memory").

const root = resolve(import.meta.dirname, '../..')
const dir = mkdtempSync(join(tmpdir(), 'skein-feed-heap-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

const COUNT = 600
const KB = 900
const MIB = 1024 * 1024
/** Heap growth allowed beyond what the window may hold: statements, caches, fragmentation. */
const SLACK = 32 * MIB

function appendLarge(name: string, watch: boolean) {
  const r = spawnSync(
    process.execPath,
    [
      '--expose-gc',
      '--conditions=skein-source',
      '--import',
      'tsx',
      'test/stores/feed-heap-child.ts',
      freshPath(dir, `${name}.db`),
      watch ? '1' : '0',
      String(COUNT),
      String(KB),
    ],
    { cwd: root, encoding: 'utf8', timeout: 300_000 },
  )
  if (r.status !== 0) throw new Error(`child exited ${r.status}: ${r.stderr}`)
  const { before, after, unwatched } = JSON.parse(r.stdout) as Record<string, number>
  const grew = (after - before) / MIB
  process.stdout.write(
    `SCORE feed-heap watch=${watch} events=${COUNT}x${KB}KiB heap_growth_mib=${grew.toFixed(1)} after_unwatch_mib=${((unwatched - before) / MIB).toFixed(1)} bound_mib=${((watch ? RECENT_BYTES : 0) + SLACK) / MIB}\n`,
  )
  return { grew: after - before, unwatched: unwatched - before }
}

describe('SQLite change feed memory is bounded by bytes', () => {
  it(`${COUNT} appends of ${KB} KiB with nothing reading the feed keep none of them`, () => {
    const { grew } = appendLarge('unwatched', false)
    expect(grew).toBeLessThan(SLACK)
  }, 300_000)

  it('with the feed watched, at most RECENT_BYTES of them, and none once unwatched', () => {
    const { grew, unwatched } = appendLarge('watched', true)
    expect(grew).toBeLessThan(RECENT_BYTES + SLACK)
    expect(unwatched).toBeLessThan(SLACK)
  }, 300_000)
})
