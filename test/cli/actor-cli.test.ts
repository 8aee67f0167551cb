import { existsSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { type CliIo, runCli } from '../../src/cli/index.js'
import { PG_URL, postgresAvailable, testSchemas } from '../support/postgres.js'
import { freshPath } from '../support/temp-dirs.js'

const dir = mkdtempSync(join(tmpdir(), 'skein-actor-cli-'))
const fixture = join(import.meta.dirname, 'fixture-modules.ts')
afterAll(() => rmSync(dir, { recursive: true, force: true }))

/** Runs `skein actor` through runCli until `stop()`; resolves once it listens. */
async function actor(args: string[]) {
  const controller = new AbortController()
  const out: string[] = []
  const err: string[] = []
  let listening!: (info: { url: string; db: string }) => void
  const ready = new Promise<{ url: string; db: string }>((r) => (listening = r))
  const done = runCli(['actor', ...args], {
    stdout: { write: (t: string) => out.push(t) },
    stderr: { write: (t: string) => err.push(t) },
    env: {},
    signal: controller.signal,
    cwd: dir,
    onListening: listening,
  })
  const info = await Promise.race([
    ready,
    done.then((code) => {
      throw new Error(`actor exited ${code}: ${err.join('')}`)
    }),
  ])
  return {
    ...info,
    out,
    stop: () => {
      controller.abort()
      return done
    },
  }
}

async function cli(args: string[], url: string) {
  let stdout = ''
  let stderr = ''
  const io: CliIo = {
    stdout: { write: (t: string) => (stdout += t) },
    stderr: { write: (t: string) => (stderr += t) },
    env: { SKEIN_URL: url },
  }
  const code = await runCli(args, io)
  return { code, stdout, stderr }
}

describe('skein actor', () => {
  it('serves an actor host and its debugger over a directory; runs survive a restart; runs are listed from the registry', async () => {
    const cells = freshPath(dir, 'cells')
    const host = await actor([fixture, '--dir', cells, '--port', '0'])
    expect(host.out.join('')).toContain(
      `skein actor host ${host.url}\n  debugger ${host.url}/_skein/\n`,
    )
    const page = await fetch(`${host.url}/_skein/`)
    expect(page.status).toBe(200)
    expect(await page.text()).toContain('<div id="app">')
    const started = await cli(
      ['start', 'workflow', 'review', '--input', '{"topic":"a"}', '--run-id', 'kept', '--json'],
      host.url,
    )
    expect(started.code, started.stderr).toBe(0)
    expect(existsSync(join(cells, 'runs', 'kept.sqlite'))).toBe(true)
    const listing = await cli(['runs'], host.url)
    expect(listing.code, listing.stderr).toBe(0)
    expect(listing.stdout).toContain('kept')
    expect(await host.stop()).toBe(0)

    const again = await actor([fixture, '--dir', cells, '--port', '0'])
    const approved = await cli(['approve', 'kept', '--json'], again.url)
    expect(approved.code, approved.stderr).toBe(0)
    expect(JSON.parse(approved.stdout).state.status).toBe('completed')
    expect(await again.stop()).toBe(0)
  }, 60_000)

  describe('with --store (cells over one shared Postgres schema)', () => {
    if (!postgresAvailable('actor-cli')) return
    const schemas = testSchemas('actor_cli')
    it('two hosts on one schema serve the same run; the registry is a table of the schema', async () => {
      const schema = schemas.next()
      const args = [fixture, '--store', PG_URL, '--schema', schema, '--port', '0']
      const a = await actor(args)
      const b = await actor(args)
      expect(a.out.join('')).toContain(`cells on Postgres schema ${schema}`)
      const started = await cli(
        [
          'start',
          'workflow',
          'review',
          '--input',
          '{"topic":"a"}',
          '--run-id',
          'pg-kept',
          '--json',
        ],
        a.url,
      )
      expect(started.code, started.stderr).toBe(0)
      // Started on one host, approved through the other.
      const approved = await cli(['approve', 'pg-kept', '--json'], b.url)
      expect(approved.code, approved.stderr).toBe(0)
      expect(JSON.parse(approved.stdout).state.status).toBe('completed')
      const { rows } = await schemas.admin.query(
        `SELECT run_id, definition_version FROM "${schema}".skein_actor_runs`,
      )
      expect(rows.map((r: { run_id: string }) => r.run_id)).toEqual(['pg-kept'])
      // The start named no version: the registry records the one it resolved to.
      expect(rows[0].definition_version).toMatch(/\S/)
      // `skein runs` lists from that registry through either host.
      const listing = await cli(['runs'], b.url)
      expect(listing.code, listing.stderr).toBe(0)
      expect(listing.stdout).toContain('pg-kept')
      expect(await a.stop()).toBe(0)
      expect(await b.stop()).toBe(0)
    }, 60_000)
  })

  it('--store takes only a Postgres URL', async () => {
    const err: string[] = []
    const code = await runCli(['actor', fixture, '--store', 'sqlite:x.db'], {
      stdout: { write: () => {} },
      stderr: { write: (t: string) => err.push(t) },
      env: {},
      cwd: dir,
    })
    expect(code).not.toBe(0)
    expect(err.join('')).toMatch(/--store takes a postgres:\/\/ \(or postgresql:\/\/\) URL/)
  })
})
