// Flow control's metrics through skein/otel: the wait-time histogram and the queue-depth
// gauges, from a real engine's observations.
import {
  AggregationTemporality,
  InMemoryMetricExporter,
  MeterProvider,
  PeriodicExportingMetricReader,
} from '@opentelemetry/sdk-metrics'
import { createEngine, type Observation } from 'skein'
import { ATTR, otelObserver } from 'skein/otel'
import { defineWorkflow, workflow } from 'skein/workflow'
import { expect, it } from 'vitest'

const one = defineWorkflow({
  name: 'one-at-a-time',
  flow: { concurrency: { limit: 1 } },
  nodes: { wait: { run: (ctx) => ctx.waitFor('app.go') } },
})

async function until(check: () => boolean | Promise<boolean>): Promise<void> {
  for (let i = 0; i < 1000; i++) {
    if (await check()) return
    await new Promise((resolve) => setTimeout(resolve, 10))
  }
  throw new Error('condition never held')
}

it('reports skein.flow.wait per queue and the queue depth gauges from the sweep', async () => {
  const exporter = new InMemoryMetricExporter(AggregationTemporality.CUMULATIVE)
  const reader = new PeriodicExportingMetricReader({ exporter, exportIntervalMillis: 3_600_000 })
  const meterProvider = new MeterProvider({ readers: [reader] })
  const otel = otelObserver({ meter: meterProvider.getMeter('test') })
  const seen: Observation[] = []
  const engine = createEngine({
    modules: [workflow({ definitions: [one] })],
    observer: {
      traceCauses: true,
      observe(o: Observation) {
        seen.push(o)
        otel.observe(o)
      },
    },
  })
  const metric = async (name: string) => {
    await reader.forceFlush()
    const metrics = exporter.getMetrics().at(-1)?.scopeMetrics[0]?.metrics ?? []
    return metrics.find((m) => m.descriptor.name === name)?.dataPoints ?? []
  }
  try {
    await engine.start(one, undefined, { runId: 'first' })
    expect((await engine.start(one, undefined, { runId: 'second' })).state.status).toBe('queued')
    // The sweep reports the store's queues every second.
    await until(() =>
      seen.some((o) => o.type === 'flow.depth' && JSON.stringify(o.queues).includes('"queued":1')),
    )
    const queue = { [ATTR.queue]: 'workflow:one-at-a-time' }
    expect((await metric('skein.flow.queued')).map((p) => [p.attributes, p.value])).toEqual([
      [queue, 1],
    ])
    expect((await metric('skein.flow.active')).map((p) => [p.attributes, p.value])).toEqual([
      [queue, 1],
    ])
    await engine.signal('first', [{ type: 'app.go' }])
    await until(async () => (await engine.getRun('second')).status === 'running')
    const waits = await metric('skein.flow.wait')
    expect(waits.map((p) => p.attributes)).toEqual([queue])
    expect((waits[0].value as { count: number }).count).toBe(2)
  } finally {
    await engine.stop()
    otel.close()
    await meterProvider.shutdown()
  }
})
