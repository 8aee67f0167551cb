// Finding runs over a real server on SQLite: GET /runs/summaries with several statuses, a
// definition, time ranges and oldest-first paging; the client; `skein runs`; bad filters 400.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createEngine, type Engine, type ServerHandle } from 'skein'
import { createEngineClient } from 'skein/client'
import { sqliteStore } from 'skein/sqlite'
import { afterAll, afterEach, describe, expect, it } from 'vitest'
import { runCli } from '../../src/cli/index.js'
import { workflow } from '../../src/modules/workflow/index.js'
import { freshPath } from '../support/temp-dirs.js'
import { breaks, waits } from './result-workflows.js'

const dir = mkdtempSync(join(tmpdir(), 'skein-search-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))
let engine: Engine
let server: ServerHandle
afterEach(async () => {
  await server?.close()
  await engine?.stop()
})

async function cli(args: string[]) {
  let stdout = ''
  let stderr = ''
  const code = await runCli(args, {
    stdout: { write: (t: string) => (stdout += t) },
    stderr: { write: (t: string) => (stderr += t) },
    env: { SKEIN_URL: server.url },
  })
  return { code, stdout, stderr }
}

describe('finding runs over HTTP', () => {
  it('filters by statuses, definition and creation time, both orders, with every layer', async () => {
    let now = 1_000
    engine = createEngine({
      store: sqliteStore({ path: freshPath(dir, 'search.db') }),
      modules: [workflow({ definitions: [waits, breaks] })],
      clock: {
        now: () => now,
        setTimeout: (fn, ms) => setTimeout(fn, ms),
        clearTimeout: (h) => clearTimeout(h as ReturnType<typeof setTimeout>),
      },
    })
    server = await engine.serve({ port: 0, hostname: '127.0.0.1' })
    const client = createEngineClient({ baseUrl: server.url })
    // w1 (1000) running, b1 (2000) failed, w2 (3000) cancelled, b2 (4000) running.
    for (const [runId, definition] of [
      ['w1', waits],
      ['b1', breaks],
      ['w2', waits],
      ['b2', breaks],
    ] as const) {
      await engine.start(definition, undefined, { runId })
      now += 1_000
    }
    await engine.signal('b1', [{ type: 'app.go' }])
    await engine.cancel('w2')

    const ids = async (query: string) => {
      const res = await fetch(`${server.url}/runs/summaries?${query}`)
      expect(res.status).toBe(200)
      return ((await res.json()) as { runs: Array<{ runId: string }> }).runs.map((r) => r.runId)
    }
    expect(await ids('status=failed,cancelled')).toEqual(['w2', 'b1'])
    expect(await ids('status=failed,cancelled&order=oldest')).toEqual(['b1', 'w2'])
    expect(await ids('definitionName=breaks')).toEqual(['b2', 'b1'])
    expect(await ids('definitionName=waits&status=running')).toEqual(['w1'])
    expect(await ids('createdFrom=2000&createdBefore=4000')).toEqual(['w2', 'b1'])
    expect(await ids(`createdFrom=${new Date(3000).toISOString()}`)).toEqual(['b2', 'w2'])

    const oldest: string[] = []
    for await (const run of client.allRunSummaries({ order: 'oldest', limit: 1 })) {
      oldest.push(run.runId)
    }
    expect(oldest).toEqual(['w1', 'b1', 'w2', 'b2'])
    const page = await client.listRunSummaries({
      status: ['failed', 'running'],
      definitionName: 'breaks',
    })
    expect(page.runs.map((r) => r.runId)).toEqual(['b2', 'b1'])

    for (const query of [
      'status=bogus',
      'status=failed,',
      'order=sideways',
      'createdFrom=yesterday',
      'definitionName=',
      'updatedBefore=-5',
    ]) {
      const res = await fetch(`${server.url}/runs/summaries?${query}`)
      expect([query, res.status]).toEqual([query, 400])
    }

    const listed = await cli([
      'runs',
      '--definition',
      'breaks',
      '--status',
      'failed,running',
      '--oldest-first',
      '--json',
    ])
    expect(listed.code).toBe(0)
    expect(JSON.parse(listed.stdout).runs.map((r: { runId: string }) => r.runId)).toEqual([
      'b1',
      'b2',
    ])
    const since = await cli(['runs', '--created-from', new Date(3000).toISOString(), '--json'])
    expect(JSON.parse(since.stdout).runs.map((r: { runId: string }) => r.runId)).toEqual([
      'b2',
      'w2',
    ])
    const bad = await cli(['runs', '--created-from', 'tuesday'])
    expect(bad.code).toBe(1)
    expect(bad.stderr).toContain('--created-from')
  })
})
