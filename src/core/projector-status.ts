/** How the engine works its projectors (`createEngine({ projectorOptions })`). */
export interface ProjectorOptions {
  /**
   * This process's name in projector claims. Default: a random id per engine. A process that
   * restarts under the same name resumes at once instead of waiting for its old claim to lapse.
   */
  owner?: string
  /** How long a claim on a projector lasts without renewal (default 15,000 ms). */
  leaseMs?: number
  /** How often to look for other processes' commits and free claims (default 500 ms). */
  pollMs?: number
  /**
   * After a commit wakes an idle projector it waits this long, so one round (one read, one
   * checkpoint write) takes in many commits: lag for throughput (default 20 ms).
   */
  delayMs?: number
  /** Most events read per delivery round (default 500). */
  batchSize?: number
  /** Consecutive failures after which the projector is `failing` (default 5). */
  failAfter?: number
  /** Backoff of retries: first delay and cap (default 100 ms and 30,000 ms). */
  backoff?: { initialMs?: number; maxMs?: number }
}

export type ProjectorState = 'running' | 'failing' | 'stopped'

/** What `engine.projectors()` and `GET /operations/projectors` report per projector. */
export interface ProjectorStatus {
  name: string
  /** `running` (caught up or working), `failing` (failAfter failures in a row), `stopped`. */
  state: ProjectorState
  /** Whether this process holds the projector's claim (works it). */
  active: boolean
  /** The claim's holder as stored (this process or another), null when free. */
  owner: string | null
  /** Checkpoint: every event up to this position is handled. */
  position: number
  /** The store's latest position. */
  headPosition: number
  /** Events committed but not yet handled. */
  lagEvents: number
  /** How long the oldest unhandled event has waited (ms of the engine clock), 0 when caught up. */
  lagMs: number
  /** Failures in a row (0 after a success). */
  failures: number
  lastError: { message: string; runId: string | null; at: number; attempt: number } | null
  /** When the checkpoint last moved, 0 if never. */
  updatedAt: number
}
