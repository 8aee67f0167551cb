// Agents, evaluators and approvals declare `signals` and `effects` as workflows do: a declared
// signal sent to their runs is validated by its schema before anything is written, an effect
// no module registers is refused at createEngine, and a malformed declaration is refused when
// the definition is made (docs/workflows.md, "Signals" and "Declared effects").
import { createEngine, type Engine } from 'skein'
import { agent, defineAgent } from 'skein/agent'
import { approval, defineApproval } from 'skein/approval'
import { defineEvaluator, evaluator } from 'skein/evaluator'
import { afterEach, describe, expect, it } from 'vitest'
import { z } from 'zod'

const note = z.object({ text: z.string(), by: z.string().default('someone') })

let engine: Engine | undefined
afterEach(async () => {
  await engine?.stop()
  engine = undefined
})

async function refusedThenRecorded(open: Engine, runId: string, type: string): Promise<void> {
  const before = (await open.getEvents(runId)).length
  const refused = await open
    .signal(runId, [{ type, payload: { text: 1 } }])
    .catch((error: { code?: string }) => error)
  expect((refused as { code?: string }).code).toBe('INVALID_EVENT')
  expect(await open.getEvents(runId)).toHaveLength(before)
  await open.signal(runId, [{ type, payload: { text: 'hi' } }])
  const recorded = (await open.getEvents(runId)).find((e) => e.type === type)
  expect(recorded?.payload).toEqual({ text: 'hi', by: 'someone' })
}

describe('declarations on every kind', () => {
  it("an approval's declared signal is validated before anything is written", async () => {
    const refund = defineApproval({
      name: 'refund',
      title: () => 'Refund?',
      signals: { 'refund.note': note },
    })
    engine = createEngine({ modules: [approval({ definitions: [refund] })] })
    const { runId, state } = await engine.start(refund)
    expect(state.status).toBe('running')
    await refusedThenRecorded(engine, runId, 'refund.note')
  })

  it("an agent's declared signal is validated before anything is written", async () => {
    const support = defineAgent({
      name: 'support',
      instructions: 'Help.',
      conversational: true,
      signals: { 'support.note': note },
    })
    engine = createEngine({ modules: [agent({ definitions: [support] })] })
    const { runId, state } = await engine.start(support, 'hello', { wait: 'settled' })
    expect(state.status).toBe('running')
    await refusedThenRecorded(engine, runId, 'support.note')
  })

  it('an effect no module registers is refused at createEngine, for each kind', () => {
    const triage = defineEvaluator({
      name: 'triage',
      routes: ['a'],
      evaluate: () => ({ route: 'a' }),
      effects: ['crm.lookup'],
    })
    const support = defineAgent({ name: 'support', instructions: 'Help.', effects: ['crm.lookup'] })
    const refund = defineApproval({
      name: 'refund',
      title: () => 'Refund?',
      effects: ['crm.lookup'],
    })
    expect(() => createEngine({ modules: [evaluator({ definitions: [triage] })] })).toThrow(
      /definition evaluator:triage@v1 declares effect "crm\.lookup", which no module registers/,
    )
    expect(() => createEngine({ modules: [agent({ definitions: [support] })] })).toThrow(
      /definition agent:support@v1 declares effect "crm\.lookup"/,
    )
    expect(() => createEngine({ modules: [approval({ definitions: [refund] })] })).toThrow(
      /definition approval:refund@v1 declares effect "crm\.lookup"/,
    )
  })

  it('a malformed declaration is refused when the definition is made', () => {
    expect(() =>
      defineAgent({ name: 'a', instructions: 'x', signals: { 'a.b': 1 as never } }),
    ).toThrow(/agent a: signal a\.b needs a Standard Schema/)
    expect(() =>
      defineEvaluator({
        name: 'e',
        routes: ['a'],
        evaluate: () => ({ route: 'a' }),
        effects: 'crm.lookup' as never,
      }),
    ).toThrow(/evaluator e: effects must be a list/)
    expect(() => defineApproval({ name: 'r', title: () => 'R?', signals: [] as never })).toThrow(
      /approval r: signals must be an object of schemas by event type/,
    )
  })
})
