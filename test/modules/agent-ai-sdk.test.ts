import { MockLanguageModelV3, simulateReadableStream } from 'ai/test'
import { agent, aiSdkModel, defineAgent, defineTool, deltaChannel } from 'skein/agent'
import { manualClock } from 'skein/testing'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { enginesStoppedAfterEach } from '../support/engines.js'

const newEngine = enginesStoppedAfterEach()

const usage = (input: number, output: number) => ({
  inputTokens: { total: input, noCache: input, cacheRead: 0, cacheWrite: 0 },
  outputTokens: { total: output, text: output, reasoning: 0 },
})

/** A mock SDK model that streams `parts` on each call, in turn. */
function mockModel(turns: unknown[][]) {
  let i = 0
  return new MockLanguageModelV3({
    doStream: async () => ({
      stream: simulateReadableStream({
        chunks: turns[i++] as any[],
        initialDelayInMs: null,
        chunkDelayInMs: null,
      }),
    }),
  })
}

const text = (id: string, ...deltas: string[]) => [
  { type: 'text-start', id },
  ...deltas.map((delta) => ({ type: 'text-delta', id, delta })),
  { type: 'text-end', id },
]

describe('aiSdkModel', () => {
  it('streams text, returns tool calls and usage, and sends tool results back', async () => {
    const model = mockModel([
      [
        ...text('t1', 'Let me ', 'check.'),
        { type: 'tool-call', toolCallId: 'call-1', toolName: 'weather', input: '{"city":"Oslo"}' },
        {
          type: 'finish',
          finishReason: { unified: 'tool-calls', raw: undefined },
          usage: usage(20, 6),
        },
      ],
      [
        ...text('t2', 'Oslo: ', '4°C.'),
        { type: 'finish', finishReason: { unified: 'stop', raw: undefined }, usage: usage(40, 4) },
      ],
    ])
    const weather = defineTool({
      name: 'weather',
      description: 'Weather by city',
      input: z.object({ city: z.string() }),
      run: async ({ city }) => ({ city, celsius: 4 }),
    })
    const bot = defineAgent({ name: 'bot', instructions: 'Be brief.', tools: [weather] })
    const deltas = deltaChannel()
    const engine = newEngine({
      modules: [agent({ definitions: [bot], model: aiSdkModel(model), deltas })],
      clock: manualClock(),
    })
    const streamed: string[] = []
    deltas.subscribe('ai', (d) => streamed.push(d.text))
    const { state } = await engine.start(bot, 'Weather in Oslo?', { runId: 'ai', wait: 'settled' })
    expect(state.output).toEqual({ text: 'Oslo: 4°C.' })
    expect(streamed).toEqual(['Let me ', 'check.', 'Oslo: ', '4°C.'])
    const [first, second] = model.doStreamCalls
    expect(first.prompt[0]).toEqual({ role: 'system', content: 'Be brief.' })
    expect(first.tools?.[0]).toMatchObject({
      type: 'function',
      name: 'weather',
      inputSchema: { type: 'object', properties: { city: { type: 'string' } } },
    })
    expect(second.prompt.slice(2)).toMatchObject([
      {
        role: 'assistant',
        content: [
          { type: 'text', text: 'Let me check.' },
          { type: 'tool-call', toolCallId: 'call-1', toolName: 'weather', input: { city: 'Oslo' } },
        ],
      },
      {
        role: 'tool',
        content: [
          {
            type: 'tool-result',
            toolCallId: 'call-1',
            toolName: 'weather',
            output: { type: 'text', value: '{"city":"Oslo","celsius":4}' },
          },
        ],
      },
    ])
    expect(await engine.project('ai', 'tokenUsage')).toEqual({
      inputTokens: 60,
      outputTokens: 10,
      calls: 2,
    })
  })

  it('surfaces stream errors (so the effect retries them) and honours the abort signal', async () => {
    const messages = [{ role: 'user' as const, content: 'hi' }]
    const failing = aiSdkModel(
      new MockLanguageModelV3({
        doStream: async () => {
          throw new Error('rate limited')
        },
      }),
    )
    const signal = new AbortController().signal
    await expect(
      failing.generate({ instructions: '', messages, tools: [], signal }),
    ).rejects.toThrow(/rate limited/)
    let seen: AbortSignal | undefined
    const hanging = aiSdkModel(
      new MockLanguageModelV3({
        doStream: async (options) => {
          seen = options.abortSignal
          return { stream: new ReadableStream({ start() {} }) }
        },
      }),
    )
    const controller = new AbortController()
    const call = hanging.generate({
      instructions: '',
      messages,
      tools: [],
      signal: controller.signal,
    })
    await new Promise((r) => setImmediate(r))
    controller.abort(new Error('interrupted'))
    await expect(call).rejects.toThrow()
    expect(seen?.aborted).toBe(true)
  })

  it('reports a missing `ai` package as a terminal error', async () => {
    const adapter = aiSdkModel('any-model', {
      load: async () => {
        throw Object.assign(new Error("Cannot find package 'ai'"), { code: 'ERR_MODULE_NOT_FOUND' })
      },
    })
    const signal = new AbortController().signal
    await expect(
      adapter.generate({ instructions: '', messages: [], tools: [], signal }),
    ).rejects.toMatchObject({
      code: 'TERMINAL',
      message: expect.stringContaining('npm install ai'),
    })
  })
})
