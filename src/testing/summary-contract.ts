import { expect, it } from 'vitest'
import { InvalidRequestError } from '../core/errors.js'
import type { EventStore, RunMeta, StoreSummaryQuery } from '../core/ports.js'
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
    const pages = async (query: Omit<StoreSummaryQuery, 'limit' | 'cursor'>) => {
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
    expect(await pages({ status: ['completed'] })).toEqual([['d', 'b']])
    expect(await pages({ status: ['running'] })).toEqual([['x2', 'x1'], ['e', 'c'], ['a']])
    expect(await pages({ runIdPrefix: 'x' })).toEqual([['x2', 'x1']])
    expect(await pages({ status: ['failed'] })).toEqual([[]])
    expect(await pages({ status: ['running'], runIdPrefix: 'x2' })).toEqual([['x2']])

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

  it('filters by several statuses, definition, creation and update times, oldest first too', async (ctx) => {
    const store = await open()
    if (!store.listSummaries) return ctx.skip()
    // Created in this order at times 10, 20, …; two definitions, two versions, three statuses.
    const runs: Array<[string, RunMeta['status'], string, string]> = [
      ['a', 'running', 'order', '1'],
      ['b', 'failed', 'order', '1'],
      ['c', 'completed', 'refund', '1'],
      ['d', 'failed', 'order', '2'],
      ['e', 'cancelled', 'refund', '2'],
      ['f', 'failed', 'refund', '1'],
    ]
    for (const [i, [id, status, name, version]] of runs.entries()) {
      const at = (i + 1) * 10
      await store.append(id, makeEnvelopes(id, 1, 1), {
        expectedSeq: 0,
        meta: { ...meta(status, at), definitionName: name, definitionVersion: version },
      })
    }
    // b is updated last (at 100): its update time moves, its place in creation order does not.
    await store.append('b', makeEnvelopes('b', 2, 1), {
      expectedSeq: 1,
      meta: { ...meta('failed', 20), updatedAt: 100, definitionName: 'order' },
    })
    const ids = async (query: Omit<StoreSummaryQuery, 'limit' | 'cursor'>, limit = 2) => {
      const seen: string[] = []
      let cursor: string | undefined
      for (let pages = 0; pages < 10; pages++) {
        const page = await store.listSummaries!({ ...query, limit, cursor })
        seen.push(...page.runs.map((r) => r.runId))
        cursor = page.nextCursor ?? undefined
        if (cursor === undefined) return seen
      }
      throw new Error('more than 10 pages')
    }
    expect(await ids({ status: ['failed', 'cancelled'] })).toEqual(['f', 'e', 'd', 'b'])
    expect(await ids({ status: ['failed', 'cancelled'], order: 'oldest' })).toEqual([
      'b',
      'd',
      'e',
      'f',
    ])
    expect(await ids({ definitionName: 'order' })).toEqual(['d', 'b', 'a'])
    expect(await ids({ definitionName: 'order', definitionVersion: '1' })).toEqual(['b', 'a'])
    expect(await ids({ definitionName: 'refund', status: ['failed'] })).toEqual(['f'])
    expect(await ids({ createdFrom: 20, createdBefore: 50 })).toEqual(['d', 'c', 'b'])
    expect(await ids({ createdFrom: 20, createdBefore: 50, order: 'oldest' }, 1)).toEqual([
      'b',
      'c',
      'd',
    ])
    expect(await ids({ updatedFrom: 60 })).toEqual(['f', 'b'])
    expect(await ids({ updatedBefore: 30 })).toEqual(['a'])
    expect(await ids({ order: 'oldest' }, 4)).toEqual(['a', 'b', 'c', 'd', 'e', 'f'])
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
