import { TerminalError } from 'skein'
import {
  agent,
  conversation,
  defineAgent,
  defineTool,
  type ModelResponse,
  scriptedModel,
  tokenUsage,
} from 'skein/agent'
import { manualClock } from 'skein/testing'
import { defineWorkflow, workflow } from 'skein/workflow'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { enginesStoppedAfterEach } from '../support/engines.js'

const newEngine = enginesStoppedAfterEach()

const say = (content: string, usage?: ModelResponse['usage']): ModelResponse => ({
  message: { role: 'assistant', content },
  ...(usage ? { usage } : {}),
})
const callTool = (name: string, args: unknown, id = `c-${name}`): ModelResponse => ({
  message: { role: 'assistant', content: '' },
  toolCalls: [{ id, name, arguments: args }],
})

const looked: string[] = []
const lookup = defineTool({
  name: 'lookup_order',
  description: 'Find an order by id',
  input: z.object({ orderId: z.string() }),
  run: async ({ orderId }) => {
    looked.push(orderId)
    return { orderId, status: 'shipped' }
  },
})

const make = (modules: any[]) => {
  const clock = manualClock()
  const engine = newEngine({ modules, clock })
  return { engine, clock }
}

describe('agent turn loop', () => {
  it('runs tools across turns and completes with the final text', async () => {
    looked.length = 0
    const model = scriptedModel([
      callTool('lookup_order', { orderId: 'A1' }),
      callTool('lookup_order', { orderId: 'B2' }, 'c2'),
      say('Both orders shipped.', { inputTokens: 7, outputTokens: 3 }),
    ])
    const support = defineAgent({ name: 'support', instructions: 'Help.', tools: [lookup] })
    const { engine } = make([agent({ definitions: [support], model })])
    const { runId, state } = await engine.start(support, 'Where are my orders?')
    expect(state.status).toBe('completed')
    expect(state.output).toEqual({ text: 'Both orders shipped.' })
    expect(looked).toEqual(['A1', 'B2'])
    // The model saw the instructions, the tool list, and each result in turn.
    expect(model.requests[0].instructions).toBe('Help.')
    expect(model.requests[0].tools[0]).toMatchObject({ name: 'lookup_order' })
    expect(model.requests[0].tools[0].inputSchema).toMatchObject({
      type: 'object',
      required: ['orderId'],
    })
    const third = model.requests[2].messages
    expect(third.map((m) => m.role)).toEqual(['user', 'assistant', 'tool', 'assistant', 'tool'])
    expect(JSON.parse(third[2].content)).toEqual({ orderId: 'A1', status: 'shipped' })
    const lines = (await engine.project(runId, conversation)).messages
    expect(lines.map((l) => l.role)).toEqual([
      'user',
      'assistant',
      'tool',
      'assistant',
      'tool',
      'assistant',
    ])
    expect(await engine.project(runId, tokenUsage)).toEqual({
      inputTokens: 7,
      outputTokens: 3,
      calls: 3,
    })
    const types = (await engine.getEvents(runId)).map((e) => e.type)
    expect(types.filter((t) => t === 'agent.tool.called')).toHaveLength(2)
  })

  it('feeds invalid tool arguments, unknown tools and tool errors back to the model', async () => {
    const broken = defineTool({
      name: 'charge',
      description: 'Charge a card',
      run: async () => {
        throw new TerminalError('card declined')
      },
    })
    const model = scriptedModel([
      callTool('lookup_order', { orderId: 42 }),
      callTool('teleport', {}),
      callTool('charge', {}),
      say('Sorry, I could not do that.'),
    ])
    const bot = defineAgent({ name: 'bot', instructions: 'x', tools: [lookup, broken] })
    const { engine } = make([agent({ definitions: [bot], model })])
    const { state } = await engine.start(bot, 'go')
    expect(state.status).toBe('completed')
    const results = model.requests.slice(1).map((r) => JSON.parse(r.messages.at(-1)!.content))
    expect(results[0].error.code).toBe('INVALID_ARGUMENTS')
    expect(results[0].error.message).toContain('orderId')
    expect(results[1].error).toMatchObject({ code: 'UNKNOWN_TOOL' })
    expect(results[1].error.message).toContain('lookup_order, charge')
    expect(results[2].error).toMatchObject({ code: 'TERMINAL', message: 'card declined' })
  })

  it('fails the thread clearly when maxTurns is exceeded', async () => {
    const model = scriptedModel(
      Array.from({ length: 5 }, (_, i) => callTool('lookup_order', { orderId: `${i}` }, `c${i}`)),
    )
    const loop = defineAgent({ name: 'loop', instructions: 'x', tools: [lookup], maxTurns: 3 })
    const { engine } = make([agent({ definitions: [loop], model })])
    const { state } = await engine.start(loop, 'go')
    expect(state.status).toBe('failed')
    expect(state.error?.code).toBe('MAX_TURNS_EXCEEDED')
    expect(state.error?.message).toContain('maxTurns 3')
    expect(model.requests).toHaveLength(3)
  })

  it('retries a failing model call by policy, then fails the agent', async () => {
    let n = 0
    const flaky = defineAgent({
      name: 'flaky',
      instructions: 'x',
      modelRetry: { maxAttempts: 2, backoffMs: 500 },
      model: {
        generate: async () => {
          n++
          throw new Error(`upstream ${n}`)
        },
      },
    })
    const { engine, clock } = make([agent({ definitions: [flaky] })])
    const { runId } = await engine.start(flaky, 'hi')
    await clock.advance(500)
    await (await engine.runtime).idle()
    const state = await engine.getRun(runId)
    expect(n).toBe(2)
    expect(state.status).toBe('failed')
    expect(state.error).toMatchObject({ code: 'MODEL_FAILED' })
    expect(state.error?.message).toContain('upstream 2')
  })
})

describe('child-thread tools', () => {
  it('runs a workflow and an agent listed in tools as child threads', async () => {
    const quote = defineWorkflow({
      name: 'refund-quote',
      input: z.object({ amount: z.number() }),
      nodes: { q: { run: ({ input }) => ({ refundable: input.amount <= 100 }) } },
      output: ({ results }) => results.q,
    })
    const helper = defineAgent({
      name: 'helper',
      description: 'Writes a note',
      instructions: 'x',
      model: scriptedModel([say('note written')]),
    })
    const model = scriptedModel([
      {
        message: { role: 'assistant', content: 'checking' },
        toolCalls: [
          { id: 'w', name: 'refund-quote', arguments: { amount: 40 } },
          { id: 'a', name: 'helper', arguments: { text: 'note please' } },
          { id: 'bad', name: 'refund-quote', arguments: { amount: 'lots' } },
        ],
      },
      say('done'),
    ])
    const lead = defineAgent({ name: 'lead', instructions: 'x', tools: [quote, helper] })
    const { engine } = make([
      workflow({ definitions: [quote] }),
      agent({ definitions: [lead], model }),
    ])
    const { state } = await engine.start(lead, 'refund 40')
    expect(state.status).toBe('completed')
    const threads = Object.values(state.threads)
    expect(threads.map((t) => `${t.kind}:${t.definitionName}:${t.status}`).sort()).toEqual([
      'agent:helper:completed',
      'agent:lead:completed',
      'workflow:refund-quote:completed',
      'workflow:refund-quote:failed',
    ])
    expect(model.requests[0].tools.map((t) => t.name)).toEqual(['refund-quote', 'helper'])
    const tools = model.requests[1].messages.filter((m) => m.role === 'tool')
    const byId = Object.fromEntries(tools.map((m) => [m.toolCallId, JSON.parse(m.content)]))
    expect(byId.w).toEqual({ refundable: true })
    expect(byId.a).toEqual({ text: 'note written' })
    expect(byId.bad.error.code).toBe('INVALID_INPUT')
  })
})
