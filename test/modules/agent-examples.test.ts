import { conversation } from 'skein/agent'
import { decision, pendingApprovals } from 'skein/approval'
import { evaluations } from 'skein/evaluator'
import { manualClock } from 'skein/testing'
import { describe, expect, it } from 'vitest'
import * as support from '../../examples/agent-support.js'
import * as refund from '../../examples/refund-evaluated.js'
import { enginesStoppedAfterEach } from '../support/engines.js'

const newEngine = enginesStoppedAfterEach()

describe('examples', () => {
  it('agent-support: looks the order up, parks on the refund gate, finishes once approved', async () => {
    const engine = newEngine({ modules: support.modules, clock: manualClock() })
    const { runId, state } = await engine.start(support.supportAgent, 'Please refund order A100')
    expect(state.status).toBe('running')
    const [item] = (await engine.project(runId, pendingApprovals)).items
    expect(item).toMatchObject({ title: 'Refund order A100?', status: 'pending' })
    const done = await engine.signal(runId, [decision(item.approvalId, 'approve')])
    expect(done.status).toBe('completed')
    expect((done.output as { text: string }).text).toMatch(
      /^Your refund for order A100 is on its way/,
    )
    const roles = (await engine.project(runId, conversation)).messages
      .filter((l) => l.threadId === done.rootThreadId)
      .map((l) => l.role)
    expect(roles).toEqual(['user', 'assistant', 'tool', 'assistant', 'tool', 'assistant'])
  })

  it('refund-evaluated: the evaluator routes small refunds to auto-pay and large ones to review', async () => {
    const engine = newEngine({ modules: refund.modules, clock: manualClock() })
    const small = await engine.start(refund.refundEvaluated, { orderId: 'o1', amount: 20 })
    expect(small.state.output).toMatchObject({ route: 'auto', refundId: expect.any(String) })
    const big = await engine.start(refund.refundEvaluated, { orderId: 'o2', amount: 400 })
    expect(big.state.status).toBe('running')
    const [item] = (await engine.project(big.runId, pendingApprovals)).items
    const done = await engine.signal(big.runId, [decision(item.approvalId, 'approve')])
    expect(done.output).toMatchObject({ route: 'review', refundId: expect.any(String) })
    const abuse = await engine.start(refund.refundEvaluated, {
      orderId: 'o3',
      amount: 10,
      recentRefunds: 7,
    })
    expect(abuse.state.output).toEqual({ route: 'reject', score: 1, refundId: null })
    expect((await engine.project(abuse.runId, evaluations)).items[0].reason).toBe(
      '7 refunds in 90 days',
    )
  })
})
