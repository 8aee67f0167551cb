// What tracing costs: the engine in memory running 3-step workflows (one effect per step),
// each started by POST /runs through the in-process handler, 16 at a time, with no observer, with `otelObserver()` on the API alone (no SDK registered:
// observations, the cause's AsyncLocalStorage, no-op spans), and with the SDK recording every
// span and metric (an exporter that drops the spans, so memory stays flat). Each a ratio to
// the engine with no observer, measured in the same process, rounds interleaved.
import { MeterProvider } from '@opentelemetry/sdk-metrics'
import {
  BasicTracerProvider,
  SimpleSpanProcessor,
  type SpanExporter,
} from '@opentelemetry/sdk-trace-base'
import { createEngine, defineEffect, defineModule, type EngineOptions } from 'skein'
import { otelObserver } from 'skein/otel'
import { defineWorkflow, workflow } from 'skein/workflow'
import { median, type Row } from './table.js'

const CONCURRENCY = 16
const RUNS = 3000
const ROUNDS = 5
const now = () => performance.now()
const TRACEPARENT = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01'

const fx = defineModule({
  namespace: 'bench',
  effects: { step: defineEffect<{ i: number }, { i: number }>({ execute: async (x) => x }) },
})
const three = defineWorkflow({
  name: 'three',
  nodes: {
    s0: { run: (ctx) => ctx.invoke('bench.step', { i: 0 }) },
    s1: { after: ['s0'], run: (ctx) => ctx.invoke('bench.step', { i: 1 }) },
    s2: { after: ['s1'], run: (ctx) => ctx.invoke('bench.step', { i: 2 }) },
  },
})

const dropping: SpanExporter = {
  // code 0: ExportResultCode.SUCCESS
  export: (_spans, done) => done({ code: 0 }),
  shutdown: async () => {},
}

async function runsPerSecond(observer: EngineOptions['observer']): Promise<number> {
  const engine = createEngine({ modules: [workflow({ definitions: [three] }), fx], observer })
  await engine.ready()
  let next = 0
  const t0 = now()
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      for (let i = next++; i < RUNS; i = next++) {
        // Through the HTTP handler (in process, no socket): the path a trace starts on.
        const response = await engine.fetch(
          new Request('http://bench/runs', {
            method: 'POST',
            headers: { 'content-type': 'application/json', traceparent: TRACEPARENT },
            body: JSON.stringify({ kind: 'workflow', definitionName: 'three' }),
          }),
        )
        if (response?.status !== 200) throw new Error(`start answered ${response?.status}`)
        await response.arrayBuffer()
      }
    }),
  )
  const rate = RUNS / ((now() - t0) / 1000)
  await engine.stop()
  return rate
}

export async function benchOtel(): Promise<Row[]> {
  const tracer = new BasicTracerProvider({
    spanProcessors: [new SimpleSpanProcessor(dropping)],
  }).getTracer('bench')
  const meter = new MeterProvider().getMeter('bench')
  const variants: Array<[string, () => EngineOptions['observer']]> = [
    ['none', () => undefined],
    ['api', () => otelObserver()],
    ['sdk', () => otelObserver({ tracer, meter })],
  ]
  await runsPerSecond(undefined) // warm-up
  const rates: Record<string, number[]> = { none: [], api: [], sdk: [] }
  for (let round = 0; round < ROUNDS; round++)
    for (const [name, make] of variants) rates[name].push(await runsPerSecond(make()))
  const base = median(rates.none)
  const row = (name: string, label: string): Row => ({
    name: `3-step workflow started by POST /runs, ${CONCURRENCY} concurrent, in memory, ${label}`,
    value: median(rates[name]),
    unit: 'runs/s',
    baseline: base,
    ratio: median(rates[name]) / base,
  })
  return [
    row('none', 'no observer'),
    row('api', 'otelObserver(), no SDK registered'),
    row('sdk', 'otelObserver() recording every span and metric'),
  ]
}
