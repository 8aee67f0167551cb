// An actor host lists runs from its run registry: GET /runs and GET /runs/summaries (every
// filter, both orders, cursor paging over every match exactly once), on SQLite cells over a
// directory; a bulk dry run counts from the same listing.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { type ActorHost, createActorHost } from 'skein/actor'
import { defineWorkflow, workflow } from 'skein/workflow'
import { afterAll, afterEach, describe, expect, it } from 'vitest'
import { freshPath } from '../support/temp-dirs.js'
import { nap } from './actor-workload.js'

const dir = mkdtempSync(join(tmpdir(), 'skein-actor-listing-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))
let host: ActorHost
afterEach(() => host?.stop())

const order = defineWorkflow({
  name: 'order',
  attributes: { customer: 'string', amount: 'number' },
  nodes: { place: { run: ({ input }) => ({ placed: input }) } },
})

async function call(path: string, body?: unknown) {
  const init: RequestInit =
    body === undefined
      ? {}
      : {
          method: 'POST',
          body: JSON.stringify(body),
          headers: { 'content-type': 'application/json' },
        }
  const res = await host.fetch(new Request(`http://actor.test${path}`, init))
  if (!res) throw new Error(`${path}: not answered`)
  return { status: res.status, body: (await res.json()) as any }
}

const ids = (page: { runs: Array<{ runId: string }> }) => page.runs.map((r) => r.runId)

describe('an actor host lists runs from its registry', () => {
  it('answers GET /runs and GET /runs/summaries with every filter, both orders and paging', {
    timeout: 60_000,
  }, async () => {
    host = createActorHost({
      modules: [workflow({ definitions: [nap, order] })],
      dir: freshPath(dir, 'cells'),
      maxOpenCells: 4,
      // Everything open: the bulk route below needs operations access.
      authorize: () => true,
    })
    for (let i = 1; i <= 6; i++) {
      const started = await call('/runs', {
        kind: 'workflow',
        definitionName: 'order',
        runId: `o-${i}`,
        input: { n: i },
        attributes: { customer: i % 2 === 0 ? 'even' : 'odd', amount: i * 10 },
      })
      expect(started.status, JSON.stringify(started.body)).toBe(200)
    }
    await call('/runs', {
      kind: 'workflow',
      definitionName: 'nap',
      runId: 'n-1',
      input: { ms: 60_000 },
    })

    const all = await call('/runs')
    expect(all.status).toBe(200)
    expect(all.body.runIds).toEqual(['o-1', 'o-2', 'o-3', 'o-4', 'o-5', 'o-6', 'n-1'])

    const newest = await call('/runs/summaries')
    expect(newest.status, JSON.stringify(newest.body)).toBe(200)
    expect(ids(newest.body)).toEqual(['n-1', 'o-6', 'o-5', 'o-4', 'o-3', 'o-2', 'o-1'])
    expect(newest.body.runs[0]).toMatchObject({
      runId: 'n-1',
      status: 'running',
      kind: 'workflow',
      definitionName: 'nap',
      definitionVersion: nap.version,
    })
    expect(newest.body.runs[1]).toMatchObject({
      status: 'completed',
      attributes: { customer: 'even', amount: 60 },
    })

    const byStatus = await call('/runs/summaries?status=running')
    expect(ids(byStatus.body)).toEqual(['n-1'])
    const byAttributes = await call(
      '/runs/summaries?definitionName=order&attr=customer=even&attr=amount>=40&order=oldest',
    )
    expect(ids(byAttributes.body)).toEqual(['o-4', 'o-6'])
    const byPrefix = await call('/runs/summaries?runIdPrefix=o-&status=completed,failed&limit=50')
    expect(ids(byPrefix.body)).toHaveLength(6)

    // Paging by twos lists every run exactly once, in both orders.
    for (const order of ['newest', 'oldest']) {
      const seen: string[] = []
      let cursor: string | null = null
      do {
        const query: string = `/runs/summaries?limit=2&order=${order}${cursor ? `&cursor=${cursor}` : ''}`
        const page = await call(query)
        expect(page.status, JSON.stringify(page.body)).toBe(200)
        seen.push(...ids(page.body))
        cursor = page.body.nextCursor
      } while (cursor)
      const expected = ['o-1', 'o-2', 'o-3', 'o-4', 'o-5', 'o-6', 'n-1']
      expect(seen).toEqual(order === 'oldest' ? expected : expected.reverse())
    }

    const bad = await call('/runs/summaries?attr=colour=red')
    expect(bad.status).toBe(400)
    expect(bad.body.error.code).toBe('INVALID_REQUEST')

    // A bulk action starts from the same listing.
    const dry = await call('/operations/runs/wake', {
      filter: { definitionName: 'nap' },
      dryRun: true,
    })
    expect(dry.status, JSON.stringify(dry.body)).toBe(200)
    expect(dry.body.matched).toBe(1)
  })
})
