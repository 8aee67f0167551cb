import { execFile } from 'node:child_process'
import { copyFileSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { afterAll, describe, expect, it } from 'vitest'

const run = promisify(execFile)
const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm'
const dir = mkdtempSync(join(tmpdir(), 'skein-lockfile-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

describe('package-lock.json', () => {
  // What `npm install` on a fresh clone would write back: a complete lockfile comes back
  // byte for byte (one written by a pruning npm gains other platforms' optional binaries).
  it('is what npm install writes, so installing leaves the tree clean and npm ci accepts it', async () => {
    for (const file of ['package.json', 'package-lock.json']) copyFileSync(file, join(dir, file))
    await run(
      npm,
      [
        'install',
        '--package-lock-only',
        '--ignore-scripts',
        '--no-audit',
        '--no-fund',
        '--prefer-offline',
      ],
      { cwd: dir, timeout: 120_000 },
    )
    const rewritten = readFileSync(join(dir, 'package-lock.json'), 'utf8')
    const committed = readFileSync('package-lock.json', 'utf8')
    expect(
      rewritten === committed,
      'npm install rewrites package-lock.json: commit what it writes',
    ).toBe(true)
  })
})
