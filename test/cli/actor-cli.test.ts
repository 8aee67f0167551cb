import { existsSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { type CliIo, runCli } from '../../src/cli/index.js'

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
  it('serves an actor host over a directory; runs survive a restart; the listing is 501', async () => {
    const host = await actor([fixture, '--dir', 'cells', '--port', '0'])
    expect(host.out.join('')).toContain(`skein actor host ${host.url}`)
    const started = await cli(
      ['start', 'workflow', 'review', '--input', '{"topic":"a"}', '--run-id', 'kept', '--json'],
      host.url,
    )
    expect(started.code, started.stderr).toBe(0)
    expect(existsSync(join(dir, 'cells', 'runs', 'kept.sqlite'))).toBe(true)
    const listing = await cli(['runs'], host.url)
    expect(listing.code).toBe(1)
    expect(listing.stderr).toMatch(/NOT_SUPPORTED: .*run registry.*\(HTTP 501\)/)
    expect(await host.stop()).toBe(0)

    const again = await actor([fixture, '--dir', 'cells', '--port', '0'])
    const approved = await cli(['approve', 'kept', '--json'], again.url)
    expect(approved.code, approved.stderr).toBe(0)
    expect(JSON.parse(approved.stdout).state.status).toBe('completed')
    expect(await again.stop()).toBe(0)
  }, 60_000)
})
