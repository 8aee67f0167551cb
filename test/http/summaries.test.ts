import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type CliIo, runCli } from '../../src/cli/index.js'
import { createEngineClient } from '../../src/client/index.js'
import { createEngine, type Engine, type ServerHandle } from '../../src/index.js'
import { defineWorkflow, workflow } from '../../src/modules/workflow/index.js'
import { sqliteStore } from '../../src/stores/sqlite/index.js'

const dir = mkdtempSync(join(tmpdir(), 'skein-summaries-http-'))
const quick = defineWorkflow({ name: 'quick', nodes: { only: { run: () => 1 } } })
const stuck = defineWorkflow({
  name: 'stuck',
  nodes: { wait: { run: (ctx) => ctx.waitFor('go') } },
})
/** More than two CLI pages (500 each). */
const QUICK_RUNS = 1001

let engine: Engine
let server: ServerHandle
beforeAll(async () => {
  engine = createEngine({
    store: sqliteStore({ path: join(dir, 'runs.db') }),
    modules: [workflow({ definitions: [quick, stuck] })],
  })
  for (let i = 0; i < QUICK_RUNS; i += 100) {
    const batch = Array.from({ length: Math.min(100, QUICK_RUNS - i) }, (_, k) =>
      engine.start(quick, undefined, { runId: `q-${String(i + k).padStart(4, '0')}` }),
    )
    await Promise.all(batch)
  }
  await engine.start(stuck, undefined, { runId: 'stuck-1' })
  await engine.start(stuck, undefined, { runId: 'stuck-2' })
  server = await engine.serve({ port: 0 })
})
afterAll(async () => {
  await engine.stop()
  await ((await engine.store) as { close(): Promise<void> }).close()
  rmSync(dir, { recursive: true, force: true })
})

const get = async (query: string) => {
  const response = await fetch(`${server.url}/runs/summaries${query}`)
  return { status: response.status, body: await response.json() }
}

describe('GET /runs/summaries pages', () => {
  it('newest first, with limit, cursor and a status filter, over a real server', async () => {
    const first = await get('?limit=2')
    expect(first.status).toBe(200)
    expect(first.body.runs.map((r: { runId: string }) => r.runId)).toEqual(['stuck-2', 'stuck-1'])
    const second = await get(`?limit=2&cursor=${encodeURIComponent(first.body.nextCursor)}`)
    expect(second.body.runs.map((r: { runId: string }) => r.runId)).toEqual(['q-1000', 'q-0999'])

    const running = await get('?status=running')
    expect(running.body).toMatchObject({ nextCursor: null })
    expect(running.body.runs.map((r: { runId: string }) => r.runId)).toEqual(['stuck-2', 'stuck-1'])
    const prefixed = await get('?runIdPrefix=q-099&limit=3')
    expect(prefixed.body.runs.map((r: { runId: string }) => r.runId)).toEqual([
      'q-0999',
      'q-0998',
      'q-0997',
    ])
    // Without a limit: the default page of 100 and a cursor onwards.
    const page = await get('')
    expect(page.body.runs).toHaveLength(100)
    expect(typeof page.body.nextCursor).toBe('string')
  })

  it('refuses bad parameters with 400 INVALID_REQUEST', async () => {
    for (const query of [
      '?limit=0',
      '?limit=1001',
      '?limit=abc',
      '?limit=1&limit=2',
      '?status=bogus',
      '?status=',
      '?cursor=nope',
      '?cursor=rs1.0',
      '?runIdPrefix=',
      '?sort=asc',
    ]) {
      const answer = await get(query)
      expect(answer.status, query).toBe(400)
      expect(answer.body.error.code, query).toBe('INVALID_REQUEST')
    }
  })

  it('the client pages through every run; listRunSummaries returns one page', async () => {
    const client = createEngineClient({ baseUrl: server.url })
    const page = await client.listRunSummaries({ status: 'completed', limit: 10 })
    expect(page.runs).toHaveLength(10)
    const all: string[] = []
    for await (const run of client.allRunSummaries({ limit: 250 })) all.push(run.runId)
    expect(all).toHaveLength(QUICK_RUNS + 2)
    expect(new Set(all).size).toBe(all.length)
    expect(all.slice(0, 3)).toEqual(['stuck-2', 'stuck-1', 'q-1000'])
  })

  it('skein runs pages through the server and filters', async () => {
    const requests: string[] = []
    const cli = async (args: string[]) => {
      let stdout = ''
      const io: CliIo = {
        stdout: { write: (t: string) => (stdout += t) },
        stderr: { write: () => {} },
        env: { SKEIN_URL: server.url },
        fetch: (request: Request) => {
          requests.push(new URL(request.url).search)
          return fetch(request)
        },
      }
      return { code: await runCli(args, io), stdout }
    }
    const everything = await cli(['runs', '--json'])
    expect(everything.code).toBe(0)
    expect(JSON.parse(everything.stdout).runs).toHaveLength(QUICK_RUNS + 2)
    expect(requests).toHaveLength(3) // 500 + 500 + 3
    requests.length = 0
    const stuckOnly = await cli(['runs', '--status', 'running'])
    expect(stuckOnly.stdout).toMatch(/stuck-2\s+running[\s\S]*stuck-1\s+running/)
    expect(stuckOnly.stdout).not.toContain('q-')
    const few = await cli(['runs', '--prefix', 'q-00', '--limit', '3', '--json'])
    expect(JSON.parse(few.stdout).runs.map((r: { runId: string }) => r.runId)).toEqual([
      'q-0099',
      'q-0098',
      'q-0097',
    ])
  })
})
