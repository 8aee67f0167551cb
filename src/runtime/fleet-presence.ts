import { definitionLabel } from '../core/definition.js'
import { isTerminal, type RunState } from '../core/envelope.js'
import type {
  ClaimStore,
  DefinitionVersionKey,
  RunMeta,
  RunSummary,
  SummaryPage,
} from '../core/ports.js'
import type { Registry } from '../core/registry.js'
import type { EngineContext } from './context.js'
import { errorFields } from './logger.js'
import { Claimer } from './ownership/claimer.js'

/**
 * Hosts advertise the definition versions they register through the store's named claims
 * (docs/deploys.md, "Stranded runs"): one claim per version, `version:["kind","name","version"]`,
 * taken or renewed every `renewMs` for `leaseMs` by a host that registers it. One live host per
 * version is enough to hold it; another takes it over once the holder stops renewing. A version
 * whose claim lapsed more than `renewMs` ago (the take-over's slack) has no live host: its runs
 * are stranded until a host that registers it starts.
 */
const PREFIX = 'version:'

/** What the fleet's view needs of the engine. */
export type FleetContext = Pick<EngineContext, 'clock' | 'registry' | 'ownership' | 'store'>

/** The key a version is advertised and looked up by (`kind`, `name`, `version`). */
export function versionKey(kind: string, name: string, version: string): string {
  return JSON.stringify([kind, name, version])
}

const claimName = (v: DefinitionVersionKey) =>
  PREFIX + versionKey(v.kind, v.definitionName, v.definitionVersion)

/** The loop that keeps this host's versions advertised while it claims due runs. */
export class FleetPresence {
  private readonly claimer: Claimer

  constructor(
    private readonly ctx: Pick<EngineContext, 'clock' | 'registry' | 'ownership' | 'log'>,
    private readonly claims: ClaimStore,
  ) {
    const own = ctx.ownership!
    this.claimer = new Claimer({
      clock: ctx.clock,
      everyMs: own.renewMs,
      round: () => this.advertise(),
      onError: (error) =>
        ctx.log.warn(
          errorFields(error),
          `advertising this host's definition versions failed; retrying in ${own.renewMs} ms`,
        ),
    })
  }

  /** Advertises at once (resolves when done, failed or not), then every `renewMs` until `stop`. */
  start(): Promise<void> {
    this.claimer.start()
    return this.advertise().catch((error: unknown) =>
      this.ctx.log.warn(errorFields(error), "advertising this host's definition versions failed"),
    )
  }

  /**
   * Not let go at a stop: the claims lapse after `leaseMs`, and another host with the version
   * takes them over (no moment in which a version other hosts register looks stranded).
   */
  stop(): void {
    this.claimer.stop()
  }

  private async advertise(): Promise<void> {
    const { clock, ownership } = this.ctx
    const now = clock.now()
    const expiresAt = now + ownership!.leaseMs
    for (const version of executableVersions(this.ctx.registry)) {
      await this.claims.claim(claimName(version), ownership!.owner, now, expiresAt)
    }
  }
}

/**
 * The versions (by `versionKey`) some live host registers, this one's included. Where hosts do
 * not advertise (no ownership or no claims: one process on the store) only this host's.
 */
export async function liveVersions(ctx: FleetContext): Promise<Set<string>> {
  const live = new Set(
    executableVersions(ctx.registry).map((v) =>
      versionKey(v.kind, v.definitionName, v.definitionVersion),
    ),
  )
  const claims = ctx.store.claims
  const own = ctx.ownership
  if (!claims || !own?.claimDue) return live
  const since = ctx.clock.now() - own.renewMs
  for (const claim of await claims.list(PREFIX)) {
    if (claim.expiresAt > since) live.add(claim.name.slice(PREFIX.length))
  }
  return live
}

type RunVersion = Pick<RunMeta, 'status' | 'kind' | 'definitionName' | 'definitionVersion'>

/** A run not yet finished whose version this host does not register: its label, else undefined. */
function foreignLabel(registry: Registry, run: RunVersion): string | undefined {
  if (isTerminal(run.status) || run.kind === '') return undefined
  const ref = { kind: run.kind, name: run.definitionName, version: run.definitionVersion }
  return registry.resolve(ref) ? undefined : definitionLabel(ref)
}

const liveKey = (run: RunVersion) => versionKey(run.kind, run.definitionName, run.definitionVersion)

/**
 * The run as this host tells it: a run not yet finished of a version this host does not
 * register says `executing: false` and why, and `stranded` when no live host registers it.
 */
export async function fleetView(ctx: FleetContext, state: RunState): Promise<RunState> {
  const label = foreignLabel(ctx.registry, state)
  if (label === undefined) return state
  if ((await liveVersions(ctx)).has(liveKey(state))) {
    const reason = `this host does not register ${label}: a host that registers it executes the run`
    return { ...state, executing: false, reason }
  }
  return { ...state, executing: false, stranded: true, reason: strandedReason(label) }
}

/** A summary page with its stranded runs flagged (one look at the fleet, only if needed). */
export async function flagStranded(ctx: FleetContext, page: SummaryPage): Promise<SummaryPage> {
  const foreign = new Set(page.runs.filter((r) => foreignLabel(ctx.registry, r) !== undefined))
  if (foreign.size === 0) return page
  const live = await liveVersions(ctx)
  const runs = page.runs.map(
    (r): RunSummary => (foreign.has(r) && !live.has(liveKey(r)) ? { ...r, stranded: true } : r),
  )
  return { ...page, runs }
}

/** Why a run of `label` is stranded. */
export function strandedReason(label: string): string {
  return `no live host registers ${label}: the run waits (input sent to it is recorded) and resumes when a host that registers it starts`
}

/**
 * The definition versions this host can execute, as a run's meta names them: what its claims
 * of due runs are limited to, so on a mixed fleet a run is only claimed by a host that
 * registers its version (docs/deploys.md).
 */
export function executableVersions(registry: Registry): DefinitionVersionKey[] {
  return registry.listDefinitions().map((d) => ({
    kind: d.kind,
    definitionName: d.name,
    definitionVersion: d.version,
  }))
}
