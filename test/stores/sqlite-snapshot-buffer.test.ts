import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { makeEnvelopes } from 'skein/testing'
import { afterAll, describe, expect, it } from 'vitest'
import { sqliteStore } from '../../src/stores/sqlite/index.js'
import { freshPath } from '../support/temp-dirs.js'

const dir = mkdtempSync(join(tmpdir(), 'skein-snapbuf-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))
const snap = (runId: string, seq: number) => ({
  runId,
  seq,
  createdAt: 1,
  format: 1,
  data: { seq },
})

describe('sqlite snapshot buffering', () => {
  it('a saved snapshot is readable at once and becomes durable with the next append', async () => {
    const path = freshPath(dir, 'a.db')
    const writer = sqliteStore({ path })
    const reader = sqliteStore({ path })
    await writer.append('r', makeEnvelopes('r', 1, 2), { expectedSeq: 0 })
    await writer.snapshots!.save(snap('r', 2))
    expect((await writer.snapshots!.latest('r'))?.seq).toBe(2)
    expect(await writer.snapshots!.list('r')).toEqual([2])
    // not yet written to the file: another connection does not see it
    expect(await reader.snapshots!.latest('r')).toBeNull()
    await writer.append('s', makeEnvelopes('s', 1, 1), { expectedSeq: 0 })
    expect((await reader.snapshots!.latest('r'))?.data).toEqual({ seq: 2 })
    await writer.close()
    await reader.close()
  })

  it('prune (which precedes any trim) writes the buffer first; close writes it too', async () => {
    const path = freshPath(dir, 'b.db')
    const writer = sqliteStore({ path })
    await writer.append('r', makeEnvelopes('r', 1, 3), { expectedSeq: 0 })
    await writer.snapshots!.save(snap('r', 1))
    await writer.snapshots!.save(snap('r', 3))
    await writer.snapshots!.prune('r', 1)
    const reader = sqliteStore({ path })
    expect(await reader.snapshots!.list('r')).toEqual([3])
    await writer.snapshots!.save(snap('r', 4))
    await writer.close()
    expect((await reader.snapshots!.latest('r'))?.seq).toBe(4)
    await reader.close()
  })
})
