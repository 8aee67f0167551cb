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

describe('CLI usage errors the commands check themselves: one line, exit 2, no request', () => {
  // The server is unreachable: exit 2 (not 1, "cannot reach") proves nothing was sent.
  const env = { SKEIN_URL: 'http://127.0.0.1:1' }
  it.each([
    [['cancel'], 'give a run id, or --filter (not both)'],
    [['cancel', 'r1', '--filter', '{}'], 'give a run id, or --filter (not both)'],
    [['cancel', '--filter', '{}', '--thread', 't1'], '--thread needs a run id, not --filter'],
    [['cancel', 'r1', '--dry-run'], '--dry-run and --max-runs go with --filter'],
    [['fork', 'r1'], 'give one of --at-seq and --at-node'],
    [['fork', 'r1', '--at-seq', '3', '--at-node', 'a'], 'give one of --at-seq and --at-node'],
    [['migrate', '--to', 'v2'], 'give a run id, or --definition <name> (not both)'],
    [['restore'], 'give an archive (a .jsonl.gz file or a directory) or --stream'],
  ])('skein %j', async (args, message) => {
    const r = await cli(args, env)
    expect(r).toEqual({ code: 2, stdout: '', stderr: `skein: ${message}\n` })
  })
})

it('schedules backfill checks --from and --to as skein runs checks its times, before any request', async () => {
  const r = await cli(['schedules', 'backfill', 'report', '--from', 'yesterday', '--to', '1'], {
    SKEIN_URL: 'http://127.0.0.1:1',
  })
  expect(r).toEqual({
    code: 1,
    stdout: '',
    stderr: 'skein: --from must be an ISO 8601 time or epoch ms, got "yesterday"\n',
  })
})
