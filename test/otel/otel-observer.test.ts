import {
  AggregationTemporality,
  InMemoryMetricExporter,
  MeterProvider,
  PeriodicExportingMetricReader,
} from '@opentelemetry/sdk-metrics'
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  type ReadableSpan,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-base'
import {
  defineEffect,
  defineModule,
  defineProjector,
  defineSchedule,
  type Observation,
  type ServerHandle,
  TerminalError,
} from 'skein'
import { ATTR, otelObserver, parseTraceparent } from 'skein/otel'
import { manualClock } from 'skein/testing'
import { defineWorkflow, workflow } from 'skein/workflow'
import { afterEach, describe, expect, it } from 'vitest'
import { enginesStoppedAfterEach } from '../support/engines.js'

// A real engine served over 127.0.0.1, real HTTP requests carrying a W3C traceparent, and the
// OpenTelemetry SDK's in-memory exporters: the spans and metrics an operator would receive.

const newEngine = enginesStoppedAfterEach()
const servers: ServerHandle[] = []
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()))
})

const TRACE_A = '4bf92f3577b34da6a3ce929d0e0e4736'
const PARENT_A = '00f067aa0ba902b7'
const TRACE_B = 'a3ce929d0e0e47364bf92f3577b34da6'
const PARENT_B = 'b7ad6b7169203331'

const fx = defineModule({
  namespace: 'fx',
  effects: {
    // Fails its first attempt, then succeeds: two attempts, one failure.
    flaky: defineEffect<{ id: string }, string>({
      retry: { maxAttempts: 3, backoffMs: 1 },
      execute: async (input, ctx) => {
        if (ctx.attempt === 1) throw new Error(`flaky ${input.id}`)
        return 'ok'
      },
    }),
    quick: defineEffect<null, string>({ execute: async () => 'done' }),
    broken: defineEffect<null, string>({
      execute: async () => {
        throw new TerminalError('no way')
      },
    }),
  },
})
const traced = defineWorkflow({
  name: 'traced',
  nodes: { a: { run: (ctx) => ctx.invoke('fx.flaky', { id: ctx.runId }) } },
})
const gated = defineWorkflow({
  name: 'gated',
  nodes: {
    wait: { run: (ctx) => ctx.waitFor('go') },
    act: { after: ['wait'], run: (ctx) => ctx.invoke('fx.quick', null) },
  },
})
const doomed = defineWorkflow({
  name: 'doomed',
  nodes: { a: { run: (ctx) => ctx.invoke('fx.broken', null) } },
})

async function tracedEngine() {
  const spans = new InMemorySpanExporter()
  const tracerProvider = new BasicTracerProvider({
    spanProcessors: [new SimpleSpanProcessor(spans)],
  })
  const metricExporter = new InMemoryMetricExporter(AggregationTemporality.CUMULATIVE)
  const reader = new PeriodicExportingMetricReader({
    exporter: metricExporter,
    exportIntervalMillis: 3_600_000,
  })
  const meterProvider = new MeterProvider({ readers: [reader] })
  const observer = otelObserver({
    tracer: tracerProvider.getTracer('test'),
    meter: meterProvider.getMeter('test'),
  })
  const engine = newEngine({
    modules: [workflow({ definitions: [traced, gated, doomed] }), fx],
    observer,
  })
  const server = await engine.serve({ port: 0 })
  servers.push(server)
  /** Every metric point by name, summed over attribute sets (counters) or counted (histograms). */
  const readMetrics = async () => {
    await reader.forceFlush()
    const latest = metricExporter.getMetrics().at(-1)
    const out: Record<string, number> = {}
    for (const scope of latest?.scopeMetrics ?? [])
      for (const metric of scope.metrics)
        for (const point of metric.dataPoints) {
          const value = point.value as number | { count: number }
          const count = typeof value === 'number' ? value : value.count
          out[metric.descriptor.name] = (out[metric.descriptor.name] ?? 0) + count
          // Also per definition: `<metric>|<definition name>`.
          const definition = point.attributes['skein.definition.name']
          if (typeof definition === 'string') {
            const key = `${metric.descriptor.name}|${definition}`
            out[key] = (out[key] ?? 0) + count
          }
        }
    return out
  }
  return { engine, server, spans, readMetrics }
}

async function until<T>(what: string, probe: () => Promise<T | undefined> | T | undefined) {
  const deadline = Date.now() + 20_000
  for (;;) {
    const value = await probe()
    if (value !== undefined && value !== false) return value as T
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise((r) => setTimeout(r, 20))
  }
}

const named = (spans: ReadableSpan[], prefix: string) =>
  spans.filter((s) => s.name.startsWith(prefix))

describe('otelObserver', () => {
  it('continues an incoming traceparent from the HTTP request into the effect attempts it causes', async () => {
    const { engine, server, spans } = await tracedEngine()
    const response = await fetch(`${server.url}/runs`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        traceparent: `00-${TRACE_A}-${PARENT_A}-01`,
      },
      body: JSON.stringify({ kind: 'workflow', definitionName: 'traced' }),
    })
    expect(response.status).toBe(200)
    const { runId } = (await response.json()) as { runId: string }
    await until(
      'the run to complete',
      async () => (await engine.getRun(runId)).status === 'completed',
    )
    const attempts = await until('two attempt spans', () => {
      const found = named(spans.getFinishedSpans(), 'skein.effect fx.flaky')
      return found.length === 2 ? found : undefined
    })

    const request = named(spans.getFinishedSpans(), 'POST /runs')
    expect(request).toHaveLength(1)
    expect(request[0].spanContext().traceId).toBe(TRACE_A)
    expect(request[0].parentSpanContext?.spanId).toBe(PARENT_A)
    expect(request[0].attributes['http.response.status_code']).toBe(200)

    // Both attempts (the second after a backoff, in a later wake pass) are in the caller's trace.
    const events = await engine.getEvents(runId)
    const started = events.filter((e) => e.type === 'runtime.effect.attempt.started')
    expect(started).toHaveLength(2)
    for (const [i, span] of attempts.entries()) {
      expect(span.spanContext().traceId).toBe(TRACE_A)
      expect(span.attributes[ATTR.runId]).toBe(runId)
      expect(span.attributes[ATTR.effectId]).toBe(started[i].effectId)
      expect(span.attributes[ATTR.threadId]).toBe(started[i].threadId)
      expect(span.attributes[ATTR.seq]).toBe(started[i].seq)
      expect(span.attributes[ATTR.attempt]).toBe(i + 1)
    }
    expect(attempts[0].status.code).toBe(2) // ERROR
    expect(attempts[1].attributes[ATTR.outcome]).toBe('ok')

    // The attempt's parent is a wake pass, whose parent is the request (or, for the retry, a
    // pass that joined the same request's trace).
    const wakes = named(spans.getFinishedSpans(), 'skein.wake')
    const firstWake = wakes.find(
      (w) => w.spanContext().spanId === attempts[0].parentSpanContext?.spanId,
    )
    expect(firstWake?.parentSpanContext?.spanId).toBe(request[0].spanContext().spanId)
    expect(firstWake?.attributes[ATTR.runId]).toBe(runId)
    for (const wake of wakes.filter((w) => w.attributes[ATTR.runId] === runId))
      expect(wake.spanContext().traceId).toBe(TRACE_A)
  })

  it('a signal with its own traceparent carries its trace into the attempts it unblocks', async () => {
    const { engine, server, spans } = await tracedEngine()
    const started = await fetch(`${server.url}/runs`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', traceparent: `00-${TRACE_A}-${PARENT_A}-01` },
      body: JSON.stringify({ kind: 'workflow', definitionName: 'gated' }),
    })
    const { runId } = (await started.json()) as { runId: string }
    const signalled = await fetch(`${server.url}/runs/${runId}/events`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', traceparent: `00-${TRACE_B}-${PARENT_B}-01` },
      body: JSON.stringify({ events: [{ type: 'go', payload: {} }] }),
    })
    expect(signalled.status).toBe(200)
    await until(
      'the run to complete',
      async () => (await engine.getRun(runId)).status === 'completed',
    )
    const [attempt] = await until('the attempt span', () => {
      const found = named(spans.getFinishedSpans(), 'skein.effect fx.quick')
      return found.length === 1 ? found : undefined
    })
    expect(attempt.spanContext().traceId).toBe(TRACE_B)
    expect(attempt.attributes[ATTR.runId]).toBe(runId)
    const signalSpan = spans.getFinishedSpans().find((s) => s.name === 'POST /runs/:id/events')
    expect(signalSpan?.spanContext().traceId).toBe(TRACE_B)
    expect(signalSpan?.parentSpanContext?.spanId).toBe(PARENT_B)
    expect(signalSpan?.attributes[ATTR.runId]).toBe(runId)
  })

  it('without a traceparent a request starts a trace of its own, which its attempts join', async () => {
    const { engine, server, spans } = await tracedEngine()
    const response = await fetch(`${server.url}/runs`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', traceparent: 'not-a-traceparent' },
      body: JSON.stringify({ kind: 'workflow', definitionName: 'doomed' }),
    })
    const { runId } = (await response.json()) as { runId: string }
    await until('the run to fail', async () => (await engine.getRun(runId)).status === 'failed')
    const request = named(spans.getFinishedSpans(), 'POST /runs')[0]
    expect(request.parentSpanContext).toBeUndefined()
    const [attempt] = named(spans.getFinishedSpans(), 'skein.effect fx.broken')
    expect(attempt.spanContext().traceId).toBe(request.spanContext().traceId)
  })

  it('counts runs started, completed and failed, effect attempts and failures, and times wakes', async () => {
    const { engine, server, readMetrics } = await tracedEngine()
    const post = (definitionName: string) =>
      fetch(`${server.url}/runs`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ kind: 'workflow', definitionName }),
      }).then((r) => r.json() as Promise<{ runId: string }>)
    const a = await post('traced')
    const b = await post('traced')
    const c = await post('doomed')
    // And one run started in-process, not over HTTP.
    const d = await engine.start(traced)
    for (const { runId } of [a, b, d])
      await until('completion', async () => (await engine.getRun(runId)).status === 'completed')
    await until('failure', async () => (await engine.getRun(c.runId)).status === 'failed')
    const m = await until('the last attempt counted', async () => {
      const read = await readMetrics()
      return read['skein.effect.attempts'] === 7 ? read : undefined
    })
    expect(m['skein.runs.started']).toBe(4)
    expect(m['skein.runs.completed']).toBe(3)
    expect(m['skein.runs.failed']).toBe(1)
    expect(m['skein.runs.completed|traced']).toBe(3)
    expect(m['skein.runs.failed|doomed']).toBe(1)
    // Three flaky runs: two attempts each, one failing; the doomed run: one failing attempt.
    expect(m['skein.effect.attempts']).toBe(7)
    expect(m['skein.effect.failures']).toBe(4)
    expect(m['skein.wake.duration']).toBeGreaterThanOrEqual(4)
    expect(m['skein.runs.cancelled']).toBeUndefined()
  })

  it('reports a registered projector lag and failures from the engine observations', async () => {
    const metricExporter = new InMemoryMetricExporter(AggregationTemporality.CUMULATIVE)
    const reader = new PeriodicExportingMetricReader({
      exporter: metricExporter,
      exportIntervalMillis: 3_600_000,
    })
    const meterProvider = new MeterProvider({ readers: [reader] })
    let thrown = 0
    const index = defineProjector({
      name: 'index',
      handle() {
        // Fails its first two batches, then keeps up.
        if (thrown < 2) {
          thrown++
          throw new Error('index down')
        }
      },
    })
    const engine = newEngine({
      modules: [workflow({ definitions: [traced] }), fx],
      projectors: [index],
      projectorOptions: { pollMs: 20, backoff: { initialMs: 5, maxMs: 20 } },
      observer: otelObserver({ meter: meterProvider.getMeter('test') }),
    })
    await engine.start(traced)
    await engine.start(traced)
    const points = await until('the lag gauge at 0 after the failures', async () => {
      await reader.forceFlush()
      const metrics = metricExporter.getMetrics().at(-1)?.scopeMetrics[0]?.metrics ?? []
      const byName = (name: string) => metrics.find((m) => m.descriptor.name === name)?.dataPoints
      const lag = byName('skein.projector.lag')
      const failures = byName('skein.projector.failures')
      const caughtUp = (await engine.projectors())[0].lagEvents === 0
      return caughtUp && lag?.[0]?.value === 0 && failures ? { lag, failures } : undefined
    })
    expect(points.lag[0].attributes[ATTR.projector]).toBe('index')
    expect(points.failures[0].attributes[ATTR.projector]).toBe('index')
    expect(points.failures[0].value).toBe(2)
    await meterProvider.shutdown()
  })

  it('counts the schedule ticks this process started, and how late each run started', async () => {
    const metricExporter = new InMemoryMetricExporter(AggregationTemporality.CUMULATIVE)
    const reader = new PeriodicExportingMetricReader({
      exporter: metricExporter,
      exportIntervalMillis: 3_600_000,
    })
    const meterProvider = new MeterProvider({ readers: [reader] })
    const clock = manualClock(Date.parse('2026-01-01T00:00:00Z'))
    const engine = newEngine({
      clock,
      modules: [workflow({ definitions: [traced] }), fx],
      schedules: [defineSchedule({ name: 'often', every: 1000, start: { definition: traced } })],
      observer: otelObserver({ meter: meterProvider.getMeter('test') }),
    })
    await engine.ready()
    await clock.advance(3_500)
    await engine.schedules.trigger('often')
    await reader.forceFlush()
    const metrics = metricExporter.getMetrics().at(-1)?.scopeMetrics[0]?.metrics ?? []
    const points = (name: string) =>
      metrics
        .find((m) => m.descriptor.name === name)
        ?.dataPoints.map((p) => ({ ...p.attributes, value: p.value })) ?? []
    const byReason = (reason: string) => ({
      [ATTR.scheduleReason]: reason,
      [ATTR.definition]: 'traced',
    })
    expect(points('skein.schedule.ticks')).toEqual([
      { ...byReason('tick'), value: 3 },
      { ...byReason('trigger'), value: 1 },
    ])
    const lateness = points('skein.schedule.lateness')
    expect(lateness.map((p) => (p.value as { count: number }).count)).toEqual([3, 1])
    expect((lateness[0].value as { min: number }).min).toBeGreaterThanOrEqual(0)
    await meterProvider.shutdown()
  })

  it('feeds the projector lag gauges from projector.lag observations', async () => {
    const metricExporter = new InMemoryMetricExporter(AggregationTemporality.CUMULATIVE)
    const reader = new PeriodicExportingMetricReader({
      exporter: metricExporter,
      exportIntervalMillis: 3_600_000,
    })
    const meterProvider = new MeterProvider({ readers: [reader] })
    const observer = otelObserver({ meter: meterProvider.getMeter('test') })
    const at = Date.now()
    observer.observe({
      type: 'projector.lag',
      runId: '',
      at,
      projector: 'index',
      lagEvents: 12,
      lagMs: 340,
    })
    observer.observe({
      type: 'projector.lag',
      runId: '',
      at,
      projector: 'nats',
      lagEvents: 0,
      lagMs: 0,
    })
    await reader.forceFlush()
    const metrics = metricExporter.getMetrics().at(-1)!.scopeMetrics[0].metrics
    const gauge = (name: string) =>
      Object.fromEntries(
        metrics
          .find((m) => m.descriptor.name === name)!
          .dataPoints.map((p) => [p.attributes[ATTR.projector], p.value]),
      )
    expect(gauge('skein.projector.lag')).toEqual({ index: 12, nats: 0 })
    expect(gauge('skein.projector.lag_ms')).toEqual({ index: 340, nats: 0 })
    await meterProvider.shutdown()
  })
})

describe('observations behind it', () => {
  it('any observer sees http.request/response; only one that sets traceCauses gets causes', async () => {
    const seen = (traceCauses: boolean) => {
      const list: Observation[] = []
      const observe = (o: Observation) => {
        list.push(o)
      }
      return { list, observer: traceCauses ? { observe, traceCauses } : observe }
    }
    for (const traceCauses of [false, true]) {
      const { list, observer } = seen(traceCauses)
      const engine = newEngine({ modules: [workflow({ definitions: [traced] }), fx], observer })
      const response = await engine.fetch(
        new Request('http://local/runs', {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ kind: 'workflow', definitionName: 'traced' }),
        }),
      )
      expect(response?.status).toBe(200)
      const request = list.find((o) => o.type === 'http.request')
      const answered = list.find((o) => o.type === 'http.response')
      expect(request).toMatchObject({ method: 'POST', route: '/runs', name: expect.any(String) })
      expect(answered).toMatchObject({ requestId: request?.requestId, status: 200 })
      const wake = list.find((o) => o.type === 'wake.started')
      expect(wake?.cause).toBe(traceCauses ? request?.requestId : undefined)
      expect(list.some((o) => o.type === 'effect.settled' && o.outcome === 'error')).toBe(true)
    }
  })
})

describe('parseTraceparent', () => {
  it('reads a version-00 header and refuses malformed or all-zero ones', () => {
    expect(parseTraceparent(`00-${TRACE_A}-${PARENT_A}-01`)).toMatchObject({
      traceId: TRACE_A,
      spanId: PARENT_A,
      traceFlags: 1,
      isRemote: true,
    })
    expect(parseTraceparent(`00-${TRACE_A}-${PARENT_A}-00`)?.traceFlags).toBe(0)
    for (const bad of [
      undefined,
      '',
      'garbage',
      `00-${'0'.repeat(32)}-${PARENT_A}-01`,
      `00-${TRACE_A}-${'0'.repeat(16)}-01`,
      `ff-${TRACE_A}-${PARENT_A}-01`,
      `00-${TRACE_A}-${PARENT_A}-01-extra`,
      `00-${TRACE_A.toUpperCase()}-${PARENT_A}-01`,
    ])
      expect(parseTraceparent(bad), String(bad)).toBeUndefined()
    // A later version may carry more fields.
    expect(parseTraceparent(`01-${TRACE_A}-${PARENT_A}-01-extra`)?.traceId).toBe(TRACE_A)
    expect(
      parseTraceparent(`00-${TRACE_A}-${PARENT_A}-01`, 'vendor=abc,other=1')?.traceState?.get(
        'vendor',
      ),
    ).toBe('abc')
  })
})
