import { execFile } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { afterAll, expect, it } from 'vitest'
import { freshPath } from '../support/temp-dirs.js'

const run = promisify(execFile)
const dir = mkdtempSync(join(tmpdir(), 'skein-review-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))
const script = join(import.meta.dirname, '../../examples/durable-review.ts')

const step = async (db: string, command: string) => {
  const { stdout } = await run(process.execPath, [
    '--conditions=skein-source',
    '--import',
    'tsx',
    script,
    command,
    '--db',
    db,
  ])
  return stdout
}

it('examples/durable-review.ts: parks, exits, is inspected and approved by new processes', async () => {
  const db = freshPath(dir, 'review.db')
  expect(await step(db, 'start')).toMatch(
    /started review-1 .*: running, parked on "Publish this post\?"/,
  )
  const inspected = await step(db, 'inspect')
  expect(inspected).toContain('run review-1: running')
  expect(inspected).toMatch(/pending approval: \S+/)
  const approved = await step(db, 'approve')
  expect(approved).toMatch(/approved \S+: run review-1 is completed/)
  expect(await step(db, 'inspect')).toContain('runtime.run.completed')
}, 60_000)
