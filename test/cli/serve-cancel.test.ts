// `skein serve --cancel-routes`: `skein cancel` works against the CLI's own host (docs/cli.md).
import { existsSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, expect, it } from 'vitest'
import { runCli } from '../../src/cli/index.js'
import { freshPath } from '../support/temp-dirs.js'

const dir = mkdtempSync(join(tmpdir(), 'skein-cli-cancel-'))
const fixture = join(import.meta.dirname, 'fixture-modules.ts')
afterAll(() => rmSync(dir, { recursive: true, force: true }))

async function cli(args: string[], env: Record<string, string> = {}) {
  let stdout = ''
  let stderr = ''
  const code = await runCli(args, {
    stdout: { write: (t: string) => (stdout += t) },
    stderr: { write: (t: string) => (stderr += t) },
    env,
    cwd: dir,
  })
  return { code, stdout, stderr }
}

/** Serves the fixture modules until `stop()`; resolves once it listens. */
async function serve(args: string[]) {
  const controller = new AbortController()
  let stderr = ''
  let listening!: (info: { url: string }) => void
  const ready = new Promise<{ url: string }>((r) => (listening = r))
  const done = runCli(['serve', fixture, '--port', '0', ...args], {
    stdout: { write: () => true },
    stderr: { write: (t: string) => (stderr += t) },
    env: {},
    cwd: dir,
    signal: controller.signal,
    onListening: listening,
  })
  const { url } = await Promise.race([
    ready,
    done.then((code) => {
      throw new Error(`serve exited ${code}: ${stderr}`)
    }),
  ])
  const stop = () => {
    controller.abort()
    return done
  }
  return { url, stop }
}

it('cancels a run and a filter dry run when served with --cancel-routes and a token', async () => {
  const server = await serve(['--db', freshPath(dir, 'on.db'), '--token', 'tok', '--cancel-routes'])
  const env = { SKEIN_URL: server.url, SKEIN_TOKEN: 'tok' }
  try {
    expect((await cli(['start', 'workflow', 'waiter', '--run-id', 'w1'], env)).code).toBe(0)
    const dry = await cli(
      ['cancel', '--filter', '{"status":"running"}', '--dry-run', '--json'],
      env,
    )
    expect(dry.code).toBe(0)
    expect(JSON.parse(dry.stdout)).toMatchObject({ action: 'cancel', dryRun: true, matched: 1 })
    const cancelled = await cli(['cancel', 'w1'], env)
    expect(cancelled).toMatchObject({ code: 0, stderr: '' })
    expect(cancelled.stdout).toContain('cancelled w1')
    const run = JSON.parse((await cli(['get', 'w1', '--json'], env)).stdout)
    expect(run.state.status).toBe('cancelled')
  } finally {
    expect(await server.stop()).toBe(0)
  }
})

it('answers NOT_CONFIGURED to skein cancel without --cancel-routes, and cancels nothing', async () => {
  const server = await serve(['--db', freshPath(dir, 'off.db'), '--token', 'tok'])
  const env = { SKEIN_URL: server.url, SKEIN_TOKEN: 'tok' }
  try {
    await cli(['start', 'workflow', 'waiter', '--run-id', 'w2'], env)
    const refused = await cli(['cancel', 'w2'], env)
    expect(refused.code).toBe(1)
    expect(refused.stderr).toMatch(/^skein: NOT_CONFIGURED: .*\(HTTP 503\)\n$/)
    const run = JSON.parse((await cli(['get', 'w2', '--json'], env)).stdout)
    expect(run.state.status).toBe('running')
  } finally {
    expect(await server.stop()).toBe(0)
  }
})

it('refuses --cancel-routes without a token in one line, before opening the store', async () => {
  const db = freshPath(dir, 'none.db')
  const r = await cli(['serve', fixture, '--port', '0', '--db', db, '--cancel-routes'])
  expect(r.code).toBe(1)
  expect(r.stderr).toBe(
    'skein: --cancel-routes needs --token (or SKEIN_TOKEN): cancelling is an operations route, off without a token\n',
  )
  expect(r.stdout).toBe('')
  expect(existsSync(db)).toBe(false)
})
