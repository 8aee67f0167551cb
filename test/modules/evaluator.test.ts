import { DefinitionError } from 'skein'
import { agent, defineAgent, type ModelResponse, scriptedModel, tokenUsage } from 'skein/agent'
import { defineEvaluator, evaluations, evaluator } from 'skein/evaluator'
import { manualClock } from 'skein/testing'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { enginesStoppedAfterEach } from '../support/engines.js'

const newEngine = enginesStoppedAfterEach()

const make = (modules: any[]) => {
  const engine = newEngine({ modules, clock: manualClock() })
  return engine
}

const risk = defineEvaluator({
  name: 'refund-risk',
  description: 'Routes a refund to auto-approval or human review',
  input: z.object({ amount: z.number() }),
  routes: ['auto', 'review'],
  evaluate: ({ amount }) =>
    amount > 100
      ? { route: 'review', score: amount / 1000, reason: 'large refund' }
      : { route: 'auto', score: amount / 1000 },
})

describe('defineEvaluator', () => {
  it('validates routes and the evaluate/questions choice at definition time', () => {
    const base = { name: 'e', evaluate: () => ({ route: 'a' as const }) }
    // @ts-expect-error no routes leaves evaluate nothing to answer: a type error too
    expect(() => defineEvaluator({ ...base, routes: [] })).toThrow(/at least one route/)
    expect(() => defineEvaluator({ ...base, routes: ['a', 'a'] })).toThrow(/unique/)
    expect(() =>
      defineEvaluator({
        name: 'e',
        routes: ['a'],
        questions: ['q?'],
        evaluate: base.evaluate,
      } as any),
    ).toThrow(/exactly one/)
    const rubric = defineEvaluator({ name: 'r', routes: ['a'], questions: ['Is it good?'] })
    expect(() => evaluator({ definitions: [rubric] })).toThrow(DefinitionError)
  })
})

describe('evaluator runs', () => {
  it('an undeclared route fails the evaluation clearly', async () => {
    const sloppy = defineEvaluator({
      name: 'sloppy',
      routes: ['yes', 'no'],
      evaluate: () => ({ route: 'maybe' }) as any,
    })
    const engine = make([evaluator({ definitions: [sloppy] })])
    const { runId, state } = await engine.start(sloppy)
    expect(state.status).toBe('failed')
    expect(state.error).toMatchObject({
      code: 'UNDECLARED_ROUTE',
      message: 'evaluator sloppy chose route "maybe", which is not one of its routes: yes, no',
      details: { route: 'maybe', routes: ['yes', 'no'] },
    })
    expect((await engine.project(runId, evaluations)).items).toEqual([])
  })

  it('a rubric is judged by the module model through a submit tool call', async () => {
    const model = scriptedModel([
      {
        message: { role: 'assistant', content: '' },
        toolCalls: [
          {
            id: 'j',
            name: 'submit_evaluation',
            arguments: '{"route":"escalate","score":0.9,"reason":"angry"}',
          },
        ],
        usage: { inputTokens: 50, outputTokens: 12 },
      },
    ])
    const tone = defineEvaluator({
      name: 'tone',
      routes: ['reply', 'escalate'],
      questions: ['Is the customer angry?', 'Is a refund demanded?'],
    })
    const engine = make([evaluator({ definitions: [tone], model })])
    const { runId, state } = await engine.start(tone, 'I WANT MY MONEY BACK')
    expect(state.output).toEqual({ route: 'escalate', score: 0.9, reason: 'angry' })
    const request = model.requests[0]
    expect(request.instructions).toContain('1. Is the customer angry?')
    expect(request.instructions).toContain('reply, escalate')
    expect(request.tools[0].inputSchema).toMatchObject({
      properties: { route: { enum: ['reply', 'escalate'] } },
    })
    expect(request.messages).toEqual([{ role: 'user', content: 'I WANT MY MONEY BACK' }])
    expect(await engine.project(runId, tokenUsage)).toEqual({
      inputTokens: 50,
      outputTokens: 12,
      calls: 1,
    })
  })

  it('a rubric answer in plain JSON text is accepted too', async () => {
    const model = scriptedModel([
      { message: { role: 'assistant', content: 'Verdict: {"route":"reply"}' } },
    ])
    const tone = defineEvaluator({ name: 'tone', routes: ['reply'], questions: ['Ok?'], model })
    const engine = make([evaluator({ definitions: [tone] })])
    expect((await engine.start(tone, 'hi')).state.output).toEqual({ route: 'reply' })
  })
})

describe('evaluations branch runs', () => {
  it('an evaluator listed in an agent`s tools runs as a child thread', async () => {
    const say = (content: string): ModelResponse => ({ message: { role: 'assistant', content } })
    const model = scriptedModel([
      {
        message: { role: 'assistant', content: '' },
        toolCalls: [{ id: 'r', name: 'refund-risk', arguments: { amount: 80 } }],
      },
      say('Auto-approved.'),
    ])
    const desk = defineAgent({ name: 'desk', instructions: 'x', tools: [risk] })
    const engine = make([agent({ definitions: [desk], model }), evaluator({ definitions: [risk] })])
    const { state } = await engine.start(desk, 'refund 80 please')
    expect(state.output).toEqual({ text: 'Auto-approved.' })
    expect(model.requests[0].tools[0]).toMatchObject({
      name: 'refund-risk',
      description: 'Routes a refund to auto-approval or human review',
    })
    const result = model.requests[1].messages.at(-1)!
    expect(result).toMatchObject({ role: 'tool', toolCallId: 'r', name: 'refund-risk' })
    expect(JSON.parse(result.content)).toEqual({ route: 'auto', score: 0.08 })
    const kinds = Object.values(state.threads).map((t) => t.kind)
    expect(kinds.sort()).toEqual(['agent', 'evaluator'])
  })
})
