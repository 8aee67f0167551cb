export type { StartOptions } from '../core/api-types.js'
/** `skein/client`: a typed HTTP client for a Skein server (explicit exports). */

export type { StreamEnd } from '../http/wire/sse-format.js'
export { ClientError } from './client-error.js'
export type {
  EngineClientOptions,
  SignalOptions,
  StreamOptions,
} from './engine-client.js'
export type { RunStream } from './run-stream.js'
export type {
  ClientTimers,
  ReconnectOptions,
  SubscribeOptions,
} from './subscribe-events.js'
export {
  createEngineClient,
  type EngineClient,
  type ProjectionsByName,
  type TypedCalls,
} from './typed-client.js'
