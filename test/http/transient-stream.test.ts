import { createEngine, type Engine, type TransientEvent } from 'skein'
import { agent, defineAgent, scriptedModel } from 'skein/agent'
import { createEngineClient } from 'skein/client'
import { afterEach, describe, expect, it } from 'vitest'

let engine: Engine | undefined
afterEach(async () => {
  await engine?.stop()
  engine = undefined
})

/** A model that streams its reply in pieces, pausing where the test says. */
function pacedModel() {
  let release!: () => void
  let connected!: () => void
  const gate = new Promise<void>((r) => {
    release = r
  })
  const listening = new Promise<void>((r) => {
    connected = r
  })
  const model = scriptedModel([
    async (req) => {
      await listening
      req.onTextDelta?.('Hel')
      req.onTextDelta?.('lo ')
      await gate
      req.onTextDelta?.('world')
      return { message: { role: 'assistant', content: 'Hello world' } }
    },
  ])
  return { model, release, connected }
}

describe('transient events over HTTP (streamed text)', () => {
  it('SSE subscribers get deltas while the model is generating, before the durable message', async () => {
    const { model, release, connected } = pacedModel()
    const bot = defineAgent({ name: 'bot', instructions: 'x' })
    engine = createEngine({ modules: [agent({ definitions: [bot], model })] })
    const server = await engine.serve({ port: 0 })
    const client = createEngineClient({ baseUrl: server.url })
    const started = engine.start(bot, 'hi', { runId: 'live', wait: 'settled' })
    const seen: string[] = []
    let sawTwo!: () => void
    const two = new Promise<void>((r) => {
      sawTwo = r
    })
    const unsubscribe = client.subscribeEvents(
      'live',
      (event) => {
        // The first durable event means the stream is live: let the model start streaming.
        connected()
        if (event.type === 'agent.message') seen.push(`message ${(event.payload as any).role}`)
      },
      {
        onTransient: (t: TransientEvent) => {
          seen.push(`delta ${(t.payload as any).text}`)
          if (seen.filter((s) => s.startsWith('delta')).length === 1) sawTwo()
        },
      },
    )
    // The model is still generating (blocked on the gate) when the first delta arrives.
    await two
    const status = await engine.getRun('live')
    expect(status.status).toBe('running')
    release()
    const { state } = await started
    expect(state.output).toEqual({ text: 'Hello world' })
    for (let i = 0; i < 50 && !seen.includes('message assistant'); i++)
      await new Promise((r) => setTimeout(r, 10))
    unsubscribe()
    const firstMessage = seen.indexOf('message assistant')
    expect(seen.indexOf('delta world')).toBeGreaterThan(-1)
    expect(seen.indexOf('delta world')).toBeLessThan(firstMessage)
    // deltas are never stored
    const types = (await engine.getEvents('live')).map((e) => e.type)
    expect(types).not.toContain('agent.delta')
    await server.close()
  })

  it('the client stream() reports transient events during the initial wake cycle', async () => {
    const { model, release, connected } = pacedModel()
    release()
    connected()
    const bot = defineAgent({ name: 'bot', instructions: 'x' })
    engine = createEngine({ modules: [agent({ definitions: [bot], model })] })
    const client = createEngineClient({
      baseUrl: 'http://skein.test',
      fetch: async (request) => (await engine!.fetch(request as Request))!,
    })
    const deltas: string[] = []
    const stream = client.stream(
      bot,
      'hi',
      {},
      { onTransient: (t) => deltas.push((t.payload as any).text) },
    )
    const types: string[] = []
    for await (const event of stream) types.push(event.type)
    expect(deltas.join('')).toBe('Hello world')
    expect(types).toContain('agent.message')
    expect((await stream.result).state.status).toBe('completed')
  })
})
