import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll } from 'vitest'

/**
 * A temporary directory for one test file, removed after its tests, and `fresh()` for a new
 * empty directory inside it (an archive sink's, a store file's) per test.
 */
export function tempDirs(prefix: string): { root: string; fresh: () => string } {
  const root = mkdtempSync(join(tmpdir(), prefix))
  afterAll(() => rmSync(root, { recursive: true, force: true }))
  let made = 0
  return { root, fresh: () => join(root, `${++made}`) }
}
