import type { EventEnvelope } from './envelope.js'
import type { PayloadCodec } from './payload-codec.js'

/** One run's committed events, in seq order, as a projector receives them. */
export interface ProjectorBatch {
  runId: string
  /** Consecutive events of the run; `events[0].seq` follows what the projector saw before. */
  events: readonly EventEnvelope[]
}

export interface ProjectorContext {
  /** The projector's name. */
  projector: string
  /** 1 on first delivery of this batch, then 2, 3, … after failures. */
  attempt: number
  /**
   * Aborted when the engine stops or this process loses the projector's claim; a long handler
   * should give up.
   */
  signal: AbortSignal
  /**
   * The engine's payload codec, when it has one (docs/data-lifecycle.md). Events arrive decoded;
   * a projector that copies them out of the process (the NATS replica) encodes them with it
   * (`encodeEvent`), so the copy holds what the store holds.
   */
  codec?: PayloadCodec
}

/**
 * A post-commit projector (docs/projectors.md): receives every run's committed
 * events in order, at least once, after commit, and keeps a durable checkpoint in the event
 * store. A handler that throws is retried with capped backoff; runs never wait for it.
 * Handlers must be idempotent (a batch may arrive again after a crash).
 */
export interface ProjectorDefinition {
  /** Unique per engine; names its checkpoint, so renaming starts over from the beginning. */
  name: string
  handle(batch: ProjectorBatch, ctx: ProjectorContext): void | Promise<void>
  /**
   * Optional: called once per round, after `handle` took every batch of it and before the
   * checkpoint moves past them, so a projector can buffer in `handle` and write a round in one
   * transaction here. When it throws, the whole round is handed over again.
   */
  flush?(ctx: ProjectorContext): void | Promise<void>
}

/** The claim that one process at a time holds to work projector `name` (`EventStore.claims`). */
export const projectorClaimName = (name: string): string => `projector:${name}`

export function defineProjector(definition: ProjectorDefinition): ProjectorDefinition {
  if (typeof definition.name !== 'string' || !/^[A-Za-z0-9_.-]{1,100}$/.test(definition.name)) {
    throw new TypeError(
      `defineProjector: name must be 1–100 letters, digits, '_', '.', '-' (got ${JSON.stringify(definition.name)})`,
    )
  }
  if (typeof definition.handle !== 'function') {
    throw new TypeError(`defineProjector(${definition.name}): handle must be a function`)
  }
  if (definition.flush !== undefined && typeof definition.flush !== 'function') {
    throw new TypeError(`defineProjector(${definition.name}): flush must be a function`)
  }
  return Object.freeze({ ...definition })
}
