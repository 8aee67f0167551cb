import { spawnSync } from 'node:child_process'
import { resolve } from 'node:path'
import { describe, expect, it } from 'vitest'
import { type CliIo, runCli } from '../../src/cli/index.js'

const root = resolve(import.meta.dirname, '../..')

async function cli(args: string[], env: CliIo['env'] = {}) {
  let stdout = ''
  let stderr = ''
  const code = await runCli(args, {
    stdout: { write: (t: string) => (stdout += t) },
    stderr: { write: (t: string) => (stderr += t) },
    env,
    signal: AbortSignal.abort(),
  })
  return { code, stdout, stderr }
}

/** The real `skein` binary in a child process, killed (SIGKILL) if it has not exited in time. */
function skein(args: string[]) {
  const r = spawnSync(
    process.execPath,
    ['--conditions=skein-source', '--import', 'tsx', 'src/cli/bin.ts', ...args],
    { cwd: root, encoding: 'utf8', timeout: 30_000, killSignal: 'SIGKILL' },
  )
  return { code: r.status, signal: r.signal, stderr: r.stderr }
}

describe('CLI input errors: one clear line, exit 1, nothing left spinning', () => {
  it('serve --db under a parent that cannot be created fails at once (no recursive mkdir spin)', () => {
    const r = skein(['serve', '--db', '/proc/nope/x.db', '--port', '0'])
    expect(r.signal, 'skein serve spun until killed').toBeNull()
    expect(r.code).toBe(1)
    expect(r.stderr).toMatch(
      /^skein: cannot open \/proc\/nope\/x\.db: .*cannot create the directory \/proc\/nope/m,
    )
  }, 60_000)

  it('actor --dir under a parent that cannot be created fails at once', () => {
    const r = skein(['actor', '--dir', '/proc/nope/cells', '--port', '0'])
    expect(r.signal, 'skein actor spun until killed').toBeNull()
    expect(r.code).toBe(1)
    expect(r.stderr).toMatch(
      /^skein: cannot open \/proc\/nope\/cells: .*cannot create the directory \/proc\/nope/m,
    )
  }, 60_000)

  it('masks a password in --url and SKEIN_URL', async () => {
    const flag = await cli(['runs', '--url', 'http://alice:s3cret@127.0.0.1:1'])
    expect(flag.code).toBe(1)
    expect(flag.stderr).not.toContain('s3cret')
    expect(flag.stderr).toContain('http://alice:***@127.0.0.1:1')
    const env = await cli(['get', 'r1'], { SKEIN_URL: 'http://bob:hunter2@127.0.0.1:1' })
    expect(env.code).toBe(1)
    expect(env.stderr).not.toContain('hunter2')
  })

  it('actor --store with a bad --schema names the schema, not a directory, and masks the password', async () => {
    // The schema is checked before any connection: no server needs to answer.
    const url = 'postgres://postgres:pw-not-shown@127.0.0.1:1/test'
    const r = await cli(['actor', '--store', url, '--schema', 'Bad;x', '--port', '0'])
    expect(r.code).toBe(1)
    expect(r.stderr).toMatch(/^skein: cannot open schema Bad;x: .*schema must be/m)
    expect(r.stderr).not.toContain('.skein/actor')
    expect(r.stderr).not.toContain('pw-not-shown')
  })

  it('serve with a file that is not a module names what a module file is', async () => {
    const r = await cli(['serve', '/etc/hostname', '--db', ':memory:', '--port', '0'])
    expect(r.code).toBe(1)
    expect(r.stderr).not.toContain('vm is not defined')
    expect(r.stderr).toMatch(
      /^skein: cannot load \/etc\/hostname: not a module file \(.*\.ts.*\)\n$/,
    )
    const missing = await cli(['serve', '/nope/mods.ts', '--db', ':memory:', '--port', '0'])
    expect(missing.stderr).toMatch(/^skein: cannot load \/nope\/mods\.ts: no such file\n$/)
  })
})
