// Named claims, the store's port for work one process does at a time (docs/storage.md,
// "Claims"); re-exported by ports.ts.

/**
 * A keyed lease over an arbitrary name: 'projector:<name>', 'sweep:retention',
 * 'schedule:<name>', 'slot:<queue>:<key>'. `epoch` is the fencing token (bumped by each
 * take-over), `expiresAt` when it lapses (engine clock ms; 0 once let go).
 */
export interface Claim {
  name: string
  owner: string
  epoch: number
  expiresAt: number
}

/**
 * Named claims in the store (docs/storage.md, "Claims"): how background work (projector rounds,
 * schedule ticks, sweeps, admissions) is done by one process at a time, and how a dead
 * process's claim expires. The rule is the run lease's (`decideClaim`, core/claim-rule.ts).
 */
export interface ClaimStore {
  /** Whether other processes reach these claims (SQLite file, Postgres). */
  readonly shared: boolean
  /**
   * Takes or renews `name` for `owner` until `expiresAt` by decideClaim's rule: a renewal when
   * `owner` holds it (same epoch); a take-over (stored epoch + 1) when it is free, released or
   * expired before `now`. Returns the claim now held, or null when another owner holds it
   * live. Atomic across processes.
   */
  claim(name: string, owner: string, now: number, expiresAt: number): Promise<Claim | null>
  /** Lets it go (expiresAt 0, epoch kept) if `owner` at `epoch` still holds it; otherwise nothing. */
  release(name: string, owner: string, epoch: number): Promise<void>
  /** The stored claim, live, lapsed or let go; null if `name` was never claimed. */
  read(name: string): Promise<Claim | null>
  /** Stored claims whose name starts with `prefix`, by name. */
  list(prefix: string): Promise<Claim[]>
}
