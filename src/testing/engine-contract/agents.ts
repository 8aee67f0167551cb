import { describe, expect } from 'vitest'
import { conversation, userMessage } from '../../modules/agent/index.js'
import { evaluations } from '../../modules/evaluator/index.js'
import type { ContractCase } from './case.js'
import { chat, echoAgent, refund, risk } from './definitions.js'

/** Agents on the deterministic echo model, and evaluators (standalone and in a workflow). */
export function agentCases(test: ContractCase): void {
  describe('agents and evaluators', () => {
    test('uses the deterministic echo model when none is configured; input may be { text } or JSON', async (w) => {
      const engine = await w.boot()
      expect((await engine.start(echoAgent, { text: 'hello' })).state.output).toEqual({
        text: 'Echo: hello',
      })
      expect((await engine.start(echoAgent, { n: 1 })).state.output).toEqual({
        text: 'Echo: {"n":1}',
      })
    })

    test('a conversational agent answers each user message and carries on after a restart', async (w) => {
      const first = await w.boot()
      const { runId } = await first.start(chat)
      for (const text of ['one', 'two']) await first.signal(runId, [userMessage(text)])
      const engine = await w.restart()
      const state = await engine.signal(runId, [userMessage('three')])
      expect(state.status).toBe('running')
      const { messages } = await engine.project(runId, conversation)
      expect(messages.map((m) => [m.role, m.content])).toEqual([
        ['user', 'one'],
        ['assistant', 'Echo: one'],
        ['user', 'two'],
        ['assistant', 'Echo: two'],
        ['user', 'three'],
        ['assistant', 'Echo: three'],
      ])
      const calls = (await engine.getEvents(runId)).filter(
        (e) => e.type === 'runtime.effect.requested',
      )
      expect(calls).toHaveLength(3) // one model call per message, none repeated by the restart
    })

    test('a standalone evaluator run completes with the evaluation and records it', async (w) => {
      const engine = await w.boot()
      const { runId, state } = await engine.start(risk, { amount: 250 })
      expect(state.status).toBe('completed')
      expect(state.output).toEqual({ route: 'review', score: 0.25, reason: 'large refund' })
      const { items } = await engine.project(runId, evaluations)
      expect(items).toEqual([
        {
          threadId: state.rootThreadId,
          evaluator: 'refund-risk',
          route: 'review',
          score: 0.25,
          reason: 'large refund',
        },
      ])
      // @ts-expect-error the schema types amount as a number: JavaScript callers still get here
      await expect(engine.start(risk, { amount: 'x' })).rejects.toMatchObject({
        code: 'INVALID_INPUT',
      })
    })

    test('ctx.evaluate in a workflow node routes the next nodes', async (w) => {
      const engine = await w.boot()
      expect((await engine.start(refund, { amount: 20 })).state.output).toEqual({
        route: 'auto',
        pay: 'paid',
      })
      const big = await engine.start(refund, { amount: 500 })
      expect(big.state.output).toEqual({ route: 'review', queue: 'queued' })
      expect((await engine.project(big.runId, evaluations)).items[0].route).toBe('review')
    })
  })
}
