import { expect, it } from 'vitest'
import type { RunAttributes, RunAttributeValue } from '../core/attributes.js'
import type { EventEnvelope } from '../core/envelope.js'
import type { EventStore, StoreSummaryQuery } from '../core/ports.js'
import { RT } from '../core/runtime-events.js'
import { meta } from './summary-contract.js'

const event = (runId: string, seq: number, type: string, payload: object): EventEnvelope => ({
  id: `${runId}-e${seq}`,
  runId,
  seq,
  ts: 1_700_000_000_000 + seq,
  type,
  payload: payload as EventEnvelope['payload'],
  threadId: null,
  origin: 'runtime',
})

/**
 * Attribute search, part of `describeEventStore` (runs inside its `describe`): the store indexes
 * the attributes a run's start and its `runtime.run.attributes` events set (null removes one),
 * filters pages by equality and inclusive ranges with the other filters and the cursor, and
 * gives each summary its attributes in their types.
 */
export function summaryAttributesContract(open: () => Promise<EventStore>): void {
  it('filters summaries by attributes set at start and changed by the run', async (ctx) => {
    const store = await open()
    if (!store.listSummaries) return ctx.skip()
    const start = async (runId: string, at: number, attributes?: RunAttributes) => {
      const payload = { kind: 'workflow', definitionName: 'demo', attributes }
      await store.append(runId, [event(runId, 1, RT.runStarted, payload)], {
        expectedSeq: 0,
        meta: meta('running', at),
      })
    }
    await start('a', 1, { customer: 'c1', amount: 10, vip: true })
    await start('b', 2, { customer: 'c2', amount: 25 })
    await start('c', 3, { customer: 'c1', amount: 40.5, vip: false })
    await start('d', 4)
    await start('e', 5, { customer: 'c1', amount: 7 })
    // c changes: amount moves, vip is removed; e fails.
    await store.append(
      'c',
      [event('c', 2, RT.runAttributes, { attributes: { amount: 12, vip: null } })],
      { expectedSeq: 1, meta: meta('running', 3) },
    )
    await store.append('e', [event('e', 2, 'test.event', {})], {
      expectedSeq: 1,
      meta: meta('failed', 5),
    })
    const ids = async (
      attributes: NonNullable<StoreSummaryQuery['attributes']>,
      rest: Omit<StoreSummaryQuery, 'limit' | 'attributes'> = {},
    ) => {
      const seen: string[] = []
      let cursor: string | undefined
      for (let pages = 0; pages < 10; pages++) {
        const page = await store.listSummaries!({ ...rest, attributes, limit: 1, cursor })
        seen.push(...page.runs.map((r) => r.runId))
        cursor = page.nextCursor ?? undefined
        if (cursor === undefined) return seen
      }
      throw new Error('more than 10 pages')
    }
    const eq = (name: string, value: RunAttributeValue) => ({ name, eq: value })
    expect(await ids([eq('customer', 'c1')])).toEqual(['e', 'c', 'a'])
    expect(await ids([eq('customer', 'c1')], { order: 'oldest' })).toEqual(['a', 'c', 'e'])
    expect(await ids([eq('customer', 'c1')], { status: ['failed'] })).toEqual(['e'])
    expect(await ids([eq('vip', true)])).toEqual(['a'])
    expect(await ids([eq('vip', false)])).toEqual([])
    expect(await ids([eq('amount', 12)])).toEqual(['c'])
    expect(await ids([{ name: 'amount', min: 10, max: 25 }])).toEqual(['c', 'b', 'a'])
    expect(await ids([{ name: 'amount', max: 10 }], { order: 'oldest' })).toEqual(['a', 'e'])
    expect(await ids([{ name: 'customer', min: 'c2' }])).toEqual(['b'])
    expect(await ids([eq('customer', 'c1'), { name: 'amount', min: 8 }])).toEqual(['c', 'a'])
    expect(await ids([eq('customer', 'c1'), eq('vip', true)], { createdFrom: 1 })).toEqual(['a'])
    expect(await ids([eq('customer', 'nobody')])).toEqual([])

    const page = await store.listSummaries({ limit: 10 })
    const attributesOf = Object.fromEntries(page.runs.map((r) => [r.runId, r.attributes]))
    expect(attributesOf).toEqual({
      a: { customer: 'c1', amount: 10, vip: true },
      b: { customer: 'c2', amount: 25 },
      c: { customer: 'c1', amount: 12 },
      d: undefined,
      e: { customer: 'c1', amount: 7 },
    })
    if (store.deleteRun) {
      await store.deleteRun('a', { at: 10, reason: 'request' })
      expect(await ids([eq('customer', 'c1')])).toEqual(['e', 'c'])
    }
  })
}
