import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, relative } from 'node:path'
import { sqliteStore } from 'skein/sqlite'
import { makeEnvelopes } from 'skein/testing'
import { afterAll, describe, expect, it } from 'vitest'
import { StoreError } from '../../src/core/errors.js'
import { freshDir } from '../support/temp-dirs.js'

const dir = mkdtempSync(join(tmpdir(), 'skein-sqlite-dir-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

describe('sqliteStore and the directory of its file', () => {
  it('creates missing directories of a relative path such as .skein/runs.db', async () => {
    const at = freshDir(dir)
    const path = relative(process.cwd(), join(at, 'app', '.skein', 'runs.db'))
    const store = sqliteStore({ path })
    await store.append('r', makeEnvelopes('r', 1, 2), { expectedSeq: 0 })
    await store.close()
    expect(existsSync(join(at, 'app', '.skein', 'runs.db'))).toBe(true)
    const reopened = sqliteStore({ path })
    expect(await reopened.tail('r')).toBe(2)
    await reopened.close()
  })

  it('says which directory it could not create, as a StoreError', () => {
    const aFile = join(freshDir(dir), 'a-file')
    writeFileSync(aFile, 'not a directory')
    const path = join(aFile, 'runs.db')
    let error: unknown
    try {
      sqliteStore({ path })
    } catch (caught) {
      error = caught
    }
    expect(StoreError.is(error)).toBe(true)
    expect((error as Error).message).toContain(aFile)
  })
})
