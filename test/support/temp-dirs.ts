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

/**
 * `name` inside a new empty directory under `dir`: what one try of a test writes (a store
 * file, an archive directory). A retried test gets a new one rather than its first try's runs,
 * keys and leases (decisions.md, "A wait on a child process in a test names the child and the
 * stage; a retried test starts clean").
 */
export function freshPath(dir: string, name: string): string {
  return join(freshDir(dir), name)
}

/** A new empty directory under `dir` for one try of a test (see `freshPath`). */
export function freshDir(dir: string): string {
  return mkdtempSync(join(dir, 'try-'))
}
