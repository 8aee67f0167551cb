import {
  type Context,
  createTraceState,
  isSpanContextValid,
  ROOT_CONTEXT,
  type SpanContext,
  trace,
} from '@opentelemetry/api'

// W3C Trace Context: `<2 hex version>-<32 hex trace id>-<16 hex parent id>-<2 hex flags>`.
// Parsed here rather than through the global propagator, so an incoming trace is continued
// whether or not the application registered one.
const TRACEPARENT = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?$/

/** The remote span an incoming `traceparent` names, or undefined when it is absent or invalid. */
export function parseTraceparent(
  header: string | undefined,
  tracestate?: string,
): SpanContext | undefined {
  if (!header) return undefined
  const match = TRACEPARENT.exec(header.trim())
  if (!match) return undefined
  const [, version, traceId, spanId, flags, rest] = match
  // Version ff is forbidden; version 00 has no trailing fields (later versions may add some).
  if (version === 'ff' || (version === '00' && rest !== undefined)) return undefined
  const context: SpanContext = {
    traceId,
    spanId,
    traceFlags: Number.parseInt(flags, 16) & 1,
    isRemote: true,
  }
  if (!isSpanContextValid(context)) return undefined
  if (tracestate) context.traceState = createTraceState(tracestate)
  return context
}

/** The context to start a request's span in: the caller's trace, else a new one. */
export function incomingContext(header: string | undefined, tracestate?: string): Context {
  const remote = parseTraceparent(header, tracestate)
  return remote ? trace.setSpanContext(ROOT_CONTEXT, remote) : ROOT_CONTEXT
}
