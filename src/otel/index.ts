// `skein/otel`: OpenTelemetry spans and metrics from the engine's observer (docs/observability.md).
// Needs the optional peer dependency `@opentelemetry/api`.
export { ATTR, type OtelObserver, type OtelObserverOptions, otelObserver } from './otel-observer.js'
export { parseTraceparent } from './traceparent.js'
