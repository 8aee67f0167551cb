import { expect, it } from 'vitest'
import { InvalidRequestError } from '../core/errors.js'
import type { EventStore, RunMeta } from '../core/ports.js'
import { makeEnvelopes } from './make-envelopes.js'

/** Run meta with this status, created and updated at `at`. */
export const meta = (status: RunMeta['status'], at: number): RunMeta => ({
  status,
  kind: 'workflow',
  definitionName: 'demo',
  definitionVersion: '1',
  createdAt: at,
  updatedAt: at,
  nextDeadlineAt: null,
})

/**
 * Paged summaries, part of `describeEventStore` (runs inside its `describe`): newest run first
 * by creation, an opaque cursor, status and run-id-prefix filters, and a foreign cursor refused.
 */
export function summaryPagingContract(open: () => Promise<EventStore>): void {
  it('pages summaries newest first with a cursor, and filters by status and id prefix', async (ctx) => {
    const store = await open()
    if (!store.listSummaries) return ctx.skip()
    // Seven runs created in this order; b and d complete later (their row changes, not their place).
    const ids = ['a', 'b', 'c', 'd', 'e', 'x1', 'x2']
    for (const [i, id] of ids.entries()) {
      await store.append(id, makeEnvelopes(id, 1, 1), { expectedSeq: 0, meta: meta('running', i) })
    }
    for (const id of ['b', 'd']) {
      await store.append(id, makeEnvelopes(id, 2, 1), {
        expectedSeq: 1,
        meta: meta('completed', 100),
      })
    }
    const pages = async (query: { status?: RunMeta['status']; runIdPrefix?: string }) => {
      const seen: string[][] = []
      let cursor: string | undefined
      do {
        const page = await store.listSummaries!({ ...query, limit: 2, cursor })
        seen.push(page.runs.map((r) => r.runId))
        cursor = page.nextCursor ?? undefined
        expect(seen.length).toBeLessThan(10)
      } while (cursor !== undefined)
      return seen
    }
    expect(await pages({})).toEqual([['x2', 'x1'], ['e', 'd'], ['c', 'b'], ['a']])
    expect(await pages({ status: 'completed' })).toEqual([['d', 'b']])
    expect(await pages({ status: 'running' })).toEqual([['x2', 'x1'], ['e', 'c'], ['a']])
    expect(await pages({ runIdPrefix: 'x' })).toEqual([['x2', 'x1']])
    expect(await pages({ status: 'failed' })).toEqual([[]])
    expect(await pages({ status: 'running', runIdPrefix: 'x2' })).toEqual([['x2']])

    const first = await store.listSummaries({ limit: 3 })
    expect(first.runs[0]).toEqual({ runId: 'x2', ...meta('running', 6) })
    expect(typeof first.nextCursor).toBe('string')
    // A run created after the first page does not shift the next one.
    await store.append('new', makeEnvelopes('new', 1, 1), {
      expectedSeq: 0,
      meta: meta('running', 7),
    })
    const second = await store.listSummaries({ limit: 3, cursor: first.nextCursor! })
    expect(second.runs.map((r) => r.runId)).toEqual(['d', 'c', 'b'])
  })

  it('refuses a cursor it did not make', async (ctx) => {
    const store = await open()
    if (!store.listSummaries) return ctx.skip()
    for (const cursor of ['', 'abc', '12', 'rs1.', 'rs1.-1', 'rs1.0', 'rs1.ZZ']) {
      const error = await store.listSummaries({ limit: 2, cursor }).catch((e: unknown) => e)
      expect(InvalidRequestError.is(error), cursor).toBe(true)
    }
  })
}
