import {
  type Attributes,
  type Context,
  type Meter,
  metrics,
  ROOT_CONTEXT,
  type Span,
  SpanKind,
  SpanStatusCode,
  type Tracer,
  trace,
} from '@opentelemetry/api'
import type { Observation } from '../runtime/options.js'
import { incomingContext } from './traceparent.js'

export interface OtelObserverOptions {
  /** Where spans go. Default: `trace.getTracer('skein')` of the globally registered provider. */
  tracer?: Tracer
  /** Where metrics go. Default: `metrics.getMeter('skein')` of the global provider. */
  meter?: Meter
  /**
   * How many request contexts are remembered so that later wake passes of a run (a retry after
   * backoff, the drive after a slow attempt) still join the request's trace. Default 10 000;
   * the oldest is forgotten first.
   */
  maxRememberedRequests?: number
}

/** A runtime observer (`createEngine({ observer })`) that also ends the spans it left open. */
export interface OtelObserver {
  observe(observation: Observation): void
  /** Asks the engine to name each wake pass's cause (the HTTP request), to parent its span. */
  readonly traceCauses: true
  /** Ends every span still open (wake passes and attempts cut short by a stop). */
  close(): void
}

/** Queue depth figures older than this are no longer reported (the sweep reports every second). */
const DEPTH_STALE_MS = 5000

/** Span attribute names (docs/observability.md lists them). */
export const ATTR = {
  runId: 'skein.run.id',
  threadId: 'skein.thread.id',
  effectId: 'skein.effect.id',
  effectType: 'skein.effect.type',
  attempt: 'skein.effect.attempt',
  seq: 'skein.event.seq',
  seqEnd: 'skein.event.seq_end',
  iterations: 'skein.wake.iterations',
  outcome: 'skein.outcome',
  kind: 'skein.run.kind',
  definition: 'skein.definition.name',
  status: 'skein.run.status',
  projector: 'skein.projector',
  scheduleReason: 'skein.schedule.reason',
  queue: 'skein.flow.queue',
} as const

/**
 * OpenTelemetry spans and metrics from the engine's observations (docs/observability.md, `skein/otel`).
 *
 * Spans: one per HTTP request (`SERVER`, continuing an incoming `traceparent`), one per wake
 * pass (a child of the request that caused it, also for later passes of that run in this
 * process) and one per in-process effect attempt (a child of the pass that launched it).
 * Metrics: `skein.runs.started|completed|failed|cancelled`, `skein.effect.attempts`,
 * `skein.effect.failures`, `skein.wake.duration` (ms), `skein.projector.failures`, the
 * `skein.projector.lag` / `skein.projector.lag_ms` gauges, `skein.schedule.ticks` and
 * `skein.schedule.lateness` (ms), flow control's `skein.flow.wait` (ms) and the
 * `skein.flow.queued` / `skein.flow.active` / `skein.flow.oldest_wait` gauges.
 *
 * @example
 * const engine = createEngine({ modules, observer: otelObserver() })
 */
export function otelObserver(options: OtelObserverOptions = {}): OtelObserver {
  const tracer = options.tracer ?? trace.getTracer('skein')
  const meter = options.meter ?? metrics.getMeter('skein')
  const maxRequests = options.maxRememberedRequests ?? 10_000

  const runsStarted = meter.createCounter('skein.runs.started', {
    description: 'Runs started',
  })
  const runsFinished = {
    completed: meter.createCounter('skein.runs.completed', { description: 'Runs completed' }),
    failed: meter.createCounter('skein.runs.failed', { description: 'Runs failed' }),
    cancelled: meter.createCounter('skein.runs.cancelled', { description: 'Runs cancelled' }),
  } as Record<string, ReturnType<Meter['createCounter']>>
  const attempts = meter.createCounter('skein.effect.attempts', {
    description: 'In-process effect attempts started',
  })
  const failures = meter.createCounter('skein.effect.failures', {
    description: 'In-process effect attempts that failed or timed out',
  })
  const wakeDuration = meter.createHistogram('skein.wake.duration', {
    description: 'Duration of one wake pass',
    unit: 'ms',
  })
  const scheduleTicks = meter.createCounter('skein.schedule.ticks', {
    description: 'Schedule ticks whose run this process started',
  })
  const scheduleLateness = meter.createHistogram('skein.schedule.lateness', {
    description: "How long after a tick's time its run started",
    unit: 'ms',
  })
  const projectorFailures = meter.createCounter('skein.projector.failures', {
    description: 'Projector batches that threw (each retried with backoff)',
  })
  // Projector lag: the latest value each projector reported, read at collection time.
  const lag = new Map<string, { events?: number; ms?: number }>()
  meter
    .createObservableGauge('skein.projector.lag', {
      description: 'Committed events a projector has not yet handled',
      unit: '{event}',
    })
    .addCallback((result) => {
      for (const [name, value] of lag)
        if (value.events !== undefined) result.observe(value.events, { [ATTR.projector]: name })
    })
  meter
    .createObservableGauge('skein.projector.lag_ms', {
      description: 'Age of the oldest committed event a projector has not yet handled',
      unit: 'ms',
    })
    .addCallback((result) => {
      for (const [name, value] of lag)
        if (value.ms !== undefined) result.observe(value.ms, { [ATTR.projector]: name })
    })

  const flowWait = meter.createHistogram('skein.flow.wait', {
    description: 'How long a run (or an effect attempt) waited for admission by flow control',
    unit: 'ms',
  })
  // Queue depth: the latest figures the sweeping process reported, read at collection time
  // (dropped once stale: another process sweeps now, and reports them).
  let depth: { at: number; queues: Array<Record<string, number | string>> } = { at: 0, queues: [] }
  const depthGauge = (name: string, field: string, description: string, unit: string) =>
    meter.createObservableGauge(name, { description, unit }).addCallback((result) => {
      if (Date.now() - depth.at > DEPTH_STALE_MS) return
      for (const q of depth.queues) result.observe(num(q[field]), { [ATTR.queue]: str(q.queue) })
    })
  depthGauge('skein.flow.queued', 'queued', 'Runs waiting for admission, per queue', '{run}')
  depthGauge('skein.flow.active', 'active', 'Runs admitted and not finished, per queue', '{run}')
  depthGauge(
    'skein.flow.oldest_wait',
    'oldestWaitMs',
    'How long the oldest waiting run of a queue has waited',
    'ms',
  )

  /** Open request spans, and every remembered request's context (bounded, oldest first out). */
  const requests = new Map<string, Span>()
  const causes = new Map<string, Context>()
  /** The open wake pass of each run (a run has one pass at a time in a process). */
  const wakes = new Map<string, { span: Span; context: Context; at: number }>()
  const openAttempts = new Map<string, Span>()

  const remember = (cause: string, context: Context) => {
    causes.set(cause, context)
    if (causes.size > maxRequests) causes.delete(causes.keys().next().value as string)
  }
  const attemptKey = (o: Observation) => `${o.runId}\u0000${o.effectId}\u0000${o.attempt}`

  const handlers: Partial<Record<Observation['type'], (o: Observation) => void>> = {
    'http.request'(o) {
      const parent = incomingContext(str(o.traceparent), str(o.tracestate))
      const attributes: Attributes = {
        'http.request.method': str(o.method),
        'http.route': str(o.route),
        'url.path': str(o.path),
      }
      if (o.runId) attributes[ATTR.runId] = o.runId
      const span = tracer.startSpan(
        `${o.method} ${o.route}`,
        { kind: SpanKind.SERVER, startTime: o.at, attributes },
        parent,
      )
      const requestId = String(o.requestId)
      requests.set(requestId, span)
      remember(requestId, trace.setSpan(parent, span))
    },
    'http.response'(o) {
      const requestId = String(o.requestId)
      const span = requests.get(requestId)
      if (!span) return
      requests.delete(requestId)
      const status = Number(o.status)
      span.setAttribute('http.response.status_code', status)
      if (status >= 500) span.setStatus({ code: SpanStatusCode.ERROR, message: str(o.error) })
      span.end(o.at)
    },
    'schedule.tick'(o) {
      const attributes = {
        [ATTR.scheduleReason]: str(o.reason),
        [ATTR.definition]: str(o.definitionName),
      }
      scheduleTicks.add(1, attributes)
      scheduleLateness.record(num(o.latenessMs), attributes)
    },
    'wake.started'(o) {
      wakes.get(o.runId)?.span.end(o.at)
      const parent = (typeof o.cause === 'string' && causes.get(o.cause)) || ROOT_CONTEXT
      const span = tracer.startSpan(
        'skein.wake',
        { startTime: o.at, attributes: { [ATTR.runId]: o.runId, [ATTR.seq]: num(o.seq) } },
        parent,
      )
      wakes.set(o.runId, { span, context: trace.setSpan(parent, span), at: o.at })
    },
    'wake.finished'(o) {
      const wake = wakes.get(o.runId)
      const outcome = o.outcome === 'error' ? 'error' : 'ok'
      wakeDuration.record(wake ? o.at - wake.at : 0, { [ATTR.outcome]: outcome })
      if (!wake) return
      wakes.delete(o.runId)
      wake.span.setAttribute(ATTR.seqEnd, num(o.seq))
      if (o.iterations !== undefined) wake.span.setAttribute(ATTR.iterations, num(o.iterations))
      if (outcome === 'error')
        wake.span.setStatus({ code: SpanStatusCode.ERROR, message: str(o.error) })
      wake.span.end(o.at)
    },
    'effect.attempt'(o) {
      if (o.effectId === undefined || o.attempt === undefined) return // a worker call's error
      const effectType = str(o.effectType)
      attempts.add(1, { [ATTR.effectType]: effectType })
      const parent = wakes.get(o.runId)?.context ?? ROOT_CONTEXT
      const attributes: Attributes = {
        [ATTR.runId]: o.runId,
        [ATTR.effectId]: str(o.effectId),
        [ATTR.effectType]: effectType,
        [ATTR.attempt]: num(o.attempt),
      }
      if (o.threadId !== undefined) attributes[ATTR.threadId] = str(o.threadId)
      if (o.seq !== undefined) attributes[ATTR.seq] = num(o.seq)
      const span = tracer.startSpan(
        `skein.effect ${effectType}`,
        { startTime: o.at, attributes },
        parent,
      )
      openAttempts.set(attemptKey(o), span)
    },
    'effect.settled'(o) {
      const outcome = str(o.outcome)
      if (outcome !== 'ok') {
        failures.add(1, { [ATTR.effectType]: str(o.effectType), [ATTR.outcome]: outcome })
      }
      const key = attemptKey(o)
      const span = openAttempts.get(key)
      if (!span) return
      openAttempts.delete(key)
      span.setAttribute(ATTR.outcome, outcome)
      if (outcome !== 'ok') {
        span.setStatus({ code: SpanStatusCode.ERROR, message: str(o.error) || outcome })
      }
      span.end(o.at)
    },
    'flow.admitted'(o) {
      flowWait.record(num(o.waitedMs), { [ATTR.queue]: str(o.queue) })
    },
    'flow.depth'(o) {
      const queues = Array.isArray(o.queues) ? o.queues : []
      depth = { at: Date.now(), queues: queues as Array<Record<string, number | string>> }
    },
    'run.started'(o) {
      runsStarted.add(1, { [ATTR.kind]: str(o.kind), [ATTR.definition]: str(o.definitionName) })
    },
    'projector.failed'(o) {
      projectorFailures.add(1, { [ATTR.projector]: str(o.projector) })
    },
    'run.finished'(o) {
      // Per definition, so a failure rate per workflow can be drawn.
      runsFinished[str(o.status)]?.add(1, {
        [ATTR.kind]: str(o.kind),
        [ATTR.definition]: str(o.definitionName),
      })
    },
  }
  // Fed by the projector runtime's observations (`projector.lag`), when it reports them.
  const projectorLag = (o: Observation) => {
    const name = str(o.projector)
    if (!name) return
    const events = o.lagEvents ?? o.lag
    lag.set(name, {
      events: typeof events === 'number' ? events : undefined,
      ms: typeof o.lagMs === 'number' ? o.lagMs : undefined,
    })
  }

  return {
    traceCauses: true,
    observe(observation) {
      if (observation.type === 'projector.lag') return projectorLag(observation)
      handlers[observation.type]?.(observation)
    },
    close() {
      for (const span of openAttempts.values()) span.end()
      for (const { span } of wakes.values()) span.end()
      for (const span of requests.values()) span.end()
      openAttempts.clear()
      wakes.clear()
      requests.clear()
    },
  }
}

const str = (value: unknown): string => (value === undefined || value === null ? '' : String(value))
const num = (value: unknown): number => (typeof value === 'number' ? value : Number(value) || 0)
