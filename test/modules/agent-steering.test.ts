import { createEngine, type Engine, type EventEnvelope, memoryStore } from 'skein'
import {
  agent,
  conversation,
  defineAgent,
  deltaChannel,
  type ModelRequest,
  type ModelResponse,
  scriptedModel,
  userMessage,
} from 'skein/agent'
import { manualClock } from 'skein/testing'
import { afterEach, describe, expect, it } from 'vitest'

const engines: Engine[] = []
afterEach(async () => {
  for (const e of engines.splice(0)) await e.stop()
})

const say = (content: string): ModelResponse => ({ message: { role: 'assistant', content } })

/** A model step that blocks until released, and rejects when its call is aborted. */
function blocked() {
  let release: (r: ModelResponse) => void = () => {}
  let started: (req: ModelRequest) => void = () => {}
  const whenStarted = new Promise<ModelRequest>((r) => {
    started = r
  })
  const step = (req: ModelRequest) =>
    new Promise<ModelResponse>((resolve, reject) => {
      release = resolve
      req.signal.addEventListener('abort', () => reject(req.signal.reason))
      started(req)
    })
  return { step, whenStarted, release: (r: ModelResponse) => release(r) }
}

/** Resolves when an event of `type` is appended to `runId`. */
async function appended(engine: Engine, runId: string, type: string): Promise<EventEnvelope> {
  let stop = () => {}
  const found = new Promise<EventEnvelope>((resolve) => {
    void engine
      .subscribe(runId, (events) => {
        const hit = events.find((e) => e.type === type)
        if (hit) resolve(hit)
      })
      .then((unsubscribe) => {
        stop = unsubscribe
      })
  })
  const event = await found
  stop()
  return event
}

const make = (modules: any[], store = memoryStore()) => {
  const engine = createEngine({ modules, clock: manualClock(), store })
  engines.push(engine)
  return engine
}

const linesOf = async (engine: Engine, runId: string) =>
  (await engine.project(runId, conversation)).messages.map((l) => `${l.role}: ${l.content}`)

describe('conversational agents', () => {
  it('park waiting for userMessage and keep the history across exchanges', async () => {
    const model = scriptedModel([say('Hello!'), say('Blue.')])
    const chat = defineAgent({ name: 'chat', instructions: 'x', conversational: true })
    const engine = make([agent({ definitions: [chat], model })])
    const { runId, threadId, state } = await engine.start(chat)
    expect(state.status).toBe('running')
    expect(state.threads[threadId].status).toBe('waiting')
    const first = await engine.signal(runId, [userMessage('Hi')])
    expect(first.threads[threadId].status).toBe('waiting')
    await engine.signal(runId, [userMessage('Favourite colour?', { threadId })])
    expect(model.requests[1].messages.map((m) => m.content)).toEqual([
      'Hi',
      'Hello!',
      'Favourite colour?',
    ])
    expect(await linesOf(engine, runId)).toEqual([
      'user: Hi',
      'assistant: Hello!',
      'user: Favourite colour?',
      'assistant: Blue.',
    ])
    expect((await engine.getRun(runId)).status).toBe('running')
  })
})

describe('steering a turn in flight', () => {
  it('an interrupting message aborts the model call and restarts it with the message', async () => {
    const gate = blocked()
    const model = scriptedModel([gate.step, say('Blue and red, then.')])
    const bot = defineAgent({ name: 'bot', instructions: 'x' })
    const engine = make([agent({ definitions: [bot], model })])
    const starting = engine.start(bot, 'Paint it blue', { runId: 'int' })
    const first = await gate.whenStarted
    const state = await engine.signal('int', [userMessage('and red', { interrupt: true })])
    await starting
    expect(first.signal.aborted).toBe(true)
    expect(state.status).toBe('completed')
    expect(state.output).toEqual({ text: 'Blue and red, then.' })
    expect(model.requests[1].messages.map((m) => m.content)).toEqual(['Paint it blue', 'and red'])
    expect(await linesOf(engine, 'int')).toEqual([
      'user: Paint it blue',
      'user: and red',
      'assistant: Blue and red, then.',
    ])
    const events = await engine.getEvents('int')
    const cancelled = events.filter((e) => e.type === 'runtime.effect.cancelled')
    expect(cancelled).toHaveLength(1)
    expect(cancelled[0].payload).toMatchObject({ reason: 'interrupted by a user message' })
  })

  it('a queued message waits for the call in flight and is read at the next turn', async () => {
    const gate = blocked()
    const model = scriptedModel([gate.step, say('And red too.')])
    const bot = defineAgent({ name: 'bot', instructions: 'x' })
    const engine = make([agent({ definitions: [bot], model })])
    const starting = engine.start(bot, 'Paint it blue', { runId: 'queue' })
    await gate.whenStarted
    const arrived = appended(engine, 'queue', 'agent.user.message')
    const signalled = engine.signal('queue', [userMessage('and red')], { wait: 'settled' })
    await arrived
    expect(model.requests).toHaveLength(1)
    gate.release(say('Blue it is.'))
    const [state] = await Promise.all([signalled, starting])
    expect(state.status).toBe('completed')
    expect(state.output).toEqual({ text: 'And red too.' })
    expect(model.requests[0].signal.aborted).toBe(false)
    expect(await linesOf(engine, 'queue')).toEqual([
      'user: Paint it blue',
      'assistant: Blue it is.',
      'user: and red',
      'assistant: And red too.',
    ])
  })
})

describe('streaming', () => {
  it('text deltas reach a subscriber before the durable agent.message', async () => {
    const deltas = deltaChannel()
    const model = scriptedModel([
      async (req) => {
        for (const piece of ['Hel', 'lo ', 'world']) req.onTextDelta?.(piece)
        return say('Hello world')
      },
    ])
    const bot = defineAgent({ name: 'bot', instructions: 'x' })
    const engine = make([agent({ definitions: [bot], model, deltas })])
    const seen: string[] = []
    deltas.subscribe('stream', (d) => seen.push(`delta ${d.text} (call ${d.call})`))
    await engine.subscribe('stream', (events) => {
      for (const e of events)
        if (e.type === 'agent.message') seen.push(`message ${(e.payload as any).role}`)
    })
    const { state } = await engine.start(bot, 'hi', { runId: 'stream' })
    expect(state.output).toEqual({ text: 'Hello world' })
    expect(seen).toEqual([
      'message user',
      'delta Hel (call 1)',
      'delta lo  (call 1)',
      'delta world (call 1)',
      'message assistant',
    ])
    // Deltas are not stored: the log keeps the final message only.
    const types = (await engine.getEvents('stream')).map((e) => e.type)
    expect(types).not.toContain('agent.delta')
  })
})

describe('restart mid-turn', () => {
  it('re-attempts the model call after a crash without duplicating the conversation', async () => {
    const store = memoryStore()
    const gate = blocked()
    const bot = defineAgent({ name: 'bot', instructions: 'x', conversational: true })
    const first = make([agent({ definitions: [bot], model: scriptedModel([gate.step]) })], store)
    const { runId } = await first.start(bot, null, { runId: 'crash' })
    void first.signal(runId, [userMessage('Are you there?')]).catch(() => {})
    await gate.whenStarted
    await first.stop() // "dies" with the model call in flight
    const model = scriptedModel([say('Yes, still here.')])
    const second = make([agent({ definitions: [bot], model })], store)
    const state = await second.wake(runId)
    expect(state.status).toBe('running')
    expect(model.requests).toHaveLength(1)
    expect(model.requests[0].messages).toEqual([{ role: 'user', content: 'Are you there?' }])
    expect(await linesOf(second, runId)).toEqual([
      'user: Are you there?',
      'assistant: Yes, still here.',
    ])
    const events = await second.getEvents(runId)
    const failed = events.find((e) => e.type === 'runtime.effect.failed')
    expect(failed?.payload).toMatchObject({ attempt: 1, reason: 'interrupted', final: false })
    const starts = events.filter((e) => e.type === 'runtime.effect.attempt.started')
    expect(starts.map((e) => (e.payload as any).attempt)).toEqual([1, 2])
    expect(events.filter((e) => e.type === 'agent.user.message')).toHaveLength(1)
  })
})
