import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { sqliteStore } from 'skein/sqlite'
import { describeEngine } from 'skein/testing/vitest'
import { afterAll } from 'vitest'

// The whole-engine contract on SQLite, in both synchronous modes: a file per test, and every
// restart opens a new store on it, as a restarted process would.
const dir = mkdtempSync(join(tmpdir(), 'skein-engine-contract-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))
let files = 0

for (const synchronous of ['full', 'normal'] as const) {
  describeEngine(`sqlite (synchronous ${synchronous})`, () => {
    const path = join(dir, `${++files}.db`)
    return { open: () => sqliteStore({ path, synchronous }) }
  })
}
