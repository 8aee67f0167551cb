import { pathToFileURL } from 'node:url'
// Agent figures: what the agent kind costs per turn over the same number of durable effects run
// by a workflow, and how fast streamed text reaches an in-process subscriber.
import { createEngine, defineEffect, defineModule, type EventEnvelope, memoryStore } from 'skein'
import {
  agent,
  defineAgent,
  defineTool,
  deltaChannel,
  type ModelAdapter,
  type ModelResponse,
  userMessage,
} from 'skein/agent'
import { defineWorkflow, workflow } from 'skein/workflow'
import { median, printRows, type Row } from './table.js'

const ROUNDS = 5
const TURNS = 10
const now = () => performance.now()

const noop = defineTool({ name: 'noop', description: 'Does nothing', run: async () => ({ ok: 1 }) })

/** Zero latency: tool calls for the first TURNS-1 calls of a run, then a final answer. */
const toolLoopModel: ModelAdapter = {
  async generate({ messages }): Promise<ModelResponse> {
    const turn = messages.filter((m) => m.role === 'assistant').length
    if (turn < TURNS - 1) {
      return {
        message: { role: 'assistant', content: '' },
        toolCalls: [{ id: `c${turn}`, name: 'noop', arguments: {} }],
      }
    }
    return { message: { role: 'assistant', content: 'done' } }
  },
}

const looper = defineAgent({ name: 'looper', instructions: 'x', tools: [noop], maxTurns: 50 })

/** The peer: a workflow doing the same durable effects (a model call and a tool per turn). */
const stepModule = defineModule({
  namespace: 'b',
  effects: { step: defineEffect({ execute: async () => ({ ok: 1 }) }) },
})
const nodes: Record<string, any> = {}
for (let i = 0; i < TURNS * 2 - 1; i++) {
  nodes[`s${i}`] = { after: i ? [`s${i - 1}`] : [], run: (ctx: any) => ctx.invoke('b.step', {}) }
}
const peer = defineWorkflow({ name: 'peer', nodes })

async function turnOverhead(): Promise<Row[]> {
  const runs = 200
  const agentRates: number[] = []
  const peerRates: number[] = []
  for (let round = 0; round < ROUNDS; round++) {
    const engine = createEngine({
      modules: [
        agent({ definitions: [looper], model: toolLoopModel }),
        workflow({ definitions: [peer] }),
        stepModule,
      ],
    })
    await engine.start(looper, 'go')
    await engine.start(peer)
    let start = now()
    for (let i = 0; i < runs; i++) await engine.start(looper, 'go')
    agentRates.push((runs * TURNS) / ((now() - start) / 1000))
    start = now()
    for (let i = 0; i < runs; i++) await engine.start(peer)
    peerRates.push((runs * TURNS) / ((now() - start) / 1000))
    await engine.stop()
  }
  const value = median(agentRates)
  const baseline = median(peerRates)
  return [
    {
      name: 'agent turns, zero-latency model + 1 tool call each',
      value,
      unit: 'turns/s',
      baseline,
      ratio: value / baseline,
      target: 2_000,
      note: 'baseline: a workflow running the same 2 effects per turn',
    },
  ]
}

/**
 * Conversational turns driven by `signal(userMessage)`: one model call per message, measured
 * over the first 100 messages and over messages 401-500 (each signal parks and snapshots the
 * whole fold, so a long conversation costs more per turn).
 */
async function conversationalTurns(): Promise<Row[]> {
  const early: number[] = []
  const late: number[] = []
  const chat = defineAgent({ name: 'chat', instructions: 'x', conversational: true })
  const instant: ModelAdapter = {
    generate: async () => ({ message: { role: 'assistant', content: 'ok' } }),
  }
  for (let round = 0; round < 3; round++) {
    const engine = createEngine({ modules: [agent({ definitions: [chat], model: instant })] })
    const { runId } = await engine.start(chat)
    let start = now()
    for (let i = 0; i < 500; i++) {
      if (i === 400) start = now()
      await engine.signal(runId, [userMessage(`m${i}`)])
      if (i === 99) early.push(100 / ((now() - start) / 1000))
    }
    late.push(100 / ((now() - start) / 1000))
    await engine.stop()
  }
  const value = median(late)
  const baseline = median(early)
  return [
    { name: 'conversational turns via signal, messages 1-100', value: baseline, unit: 'turns/s' },
    {
      name: 'conversational turns via signal, messages 401-500',
      value,
      unit: 'turns/s',
      baseline,
      ratio: value / baseline,
      target: 0.5,
      note: 'baseline: the same conversation at its start',
    },
  ]
}

/**
 * Streamed text: a model emitting DELTAS deltas in one call, counted by a deltaChannel
 * subscriber up to the durable agent.message. Baseline: the same number of durable one-event
 * appends seen by a store subscriber, i.e. what storing every delta would cost.
 */
async function deltaRate(): Promise<Row[]> {
  const DELTAS = 50_000
  const rates: number[] = []
  const durable: number[] = []
  const streamer: ModelAdapter = {
    async generate({ onTextDelta }) {
      for (let i = 0; i < DELTAS; i++) onTextDelta?.('tok ')
      return { message: { role: 'assistant', content: 'tok '.repeat(16) } }
    },
  }
  const bot = defineAgent({ name: 'bot', instructions: 'x' })
  for (let round = 0; round < ROUNDS; round++) {
    const deltas = deltaChannel()
    const engine = createEngine({
      modules: [agent({ definitions: [bot], model: streamer, deltas })],
    })
    let received = 0
    const runId = `stream-${round}`
    deltas.subscribe(runId, () => {
      received++
    })
    const start = now()
    await engine.start(bot, 'go', { runId })
    const seconds = (now() - start) / 1000
    if (received !== DELTAS) throw new Error(`subscriber saw ${received} of ${DELTAS} deltas`)
    rates.push(DELTAS / seconds)
    await engine.stop()
    durable.push(await durableAppendRate(5_000))
  }
  const value = median(rates)
  const baseline = median(durable)
  return [
    {
      name: 'text deltas to a live subscriber',
      value,
      unit: 'deltas/s',
      baseline,
      ratio: value / baseline,
      target: 100_000,
      note: 'baseline: one durable append per delta (memory store)',
    },
  ]
}

async function durableAppendRate(n: number): Promise<number> {
  const store = memoryStore()
  let seen = 0
  await store.subscribe?.('d', (events: readonly EventEnvelope[]) => {
    seen += events.length
  })
  const start = now()
  for (let seq = 1; seq <= n; seq++) {
    const event: EventEnvelope = {
      id: `e${seq}`,
      runId: 'd',
      seq,
      ts: 0,
      type: 'agent.delta',
      payload: { text: 'tok ' },
      threadId: 't',
      origin: 'runtime',
    }
    await store.append('d', [event], { expectedSeq: seq - 1 })
  }
  const rate = n / ((now() - start) / 1000)
  if (seen !== n) throw new Error(`store subscriber saw ${seen} of ${n}`)
  return rate
}

export async function benchAgent(): Promise<Row[]> {
  return [...(await turnOverhead()), ...(await conversationalTurns()), ...(await deltaRate())]
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  printRows('agents', await benchAgent())
}
