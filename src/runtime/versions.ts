import type { VersionInfo, VersionReport } from '../core/api-types.js'
import type { Definition } from '../core/definition.js'
import { PayloadUndecodableError } from '../core/errors.js'
import type { EventStore } from '../core/ports.js'
import { RT } from '../core/runtime-events.js'
import type { EngineContext } from './context.js'
import type { Fingerprints } from './fingerprint.js'
import { type FleetContext, liveVersions, versionKey } from './fleet-presence.js'

/**
 * The drift report (docs/deploys.md): runs not yet terminal counted per definition version
 * across the whole store (every host's), beside what this host registers. A version with runs
 * and no registration here waits for a host that has it; a registered version with no run left
 * that new starts do not get is safe to remove from this host's code.
 */
export async function versionReport(
  ctx: FleetContext & Pick<EngineContext, 'capabilities'>,
  fingerprints: Fingerprints,
): Promise<VersionReport> {
  const { store, registry } = ctx
  const counts = ctx.capabilities.countActiveRuns ? await store.countActiveRuns!() : []
  const live = await liveVersions(ctx)
  const byKey = new Map<string, VersionInfo>()

  for (const definition of registry.listDefinitions()) {
    const isDefault =
      registry.resolve({ kind: definition.kind, name: definition.name }) === definition
    byKey.set(versionKey(definition.kind, definition.name, definition.version), {
      kind: definition.kind,
      name: definition.name,
      version: definition.version,
      activeRuns: 0,
      registered: true,
      isDefault,
      safeToDelete: !isDefault,
      live: true,
    })
  }
  let unexecutableRuns = 0
  let strandedRuns = 0
  for (const count of counts) {
    const key = versionKey(count.kind, count.definitionName, count.definitionVersion)
    const registered = byKey.get(key)
    if (!registered) {
      unexecutableRuns += count.runs
      if (!live.has(key)) strandedRuns += count.runs
      byKey.set(key, {
        kind: count.kind,
        name: count.definitionName,
        version: count.definitionVersion,
        activeRuns: count.runs,
        registered: false,
        isDefault: false,
        safeToDelete: false,
        live: live.has(key),
      })
      continue
    }
    registered.activeRuns = count.runs
    registered.safeToDelete = false
    const definition = registry.resolve({
      kind: count.kind,
      name: count.definitionName,
      version: count.definitionVersion,
    }) as Definition
    registered.fingerprint = await sampleFingerprint(
      store,
      count.sampleRunId,
      count.definitionVersion,
      fingerprints.of(definition),
    )
  }
  const versions = [...byKey.values()].sort(
    (a, b) =>
      a.kind.localeCompare(b.kind) ||
      a.name.localeCompare(b.name) ||
      a.version.localeCompare(b.version),
  )
  return { versions, unexecutableRuns, strandedRuns }
}

/**
 * Whether the sample run's recorded shape fingerprint is the registered definition's: the one
 * its start recorded, or for a run migrated since (its start names another version) the one
 * its last `runtime.run.migrated` recorded.
 */
async function sampleFingerprint(
  store: EventStore,
  runId: string,
  version: string,
  registered: string | undefined,
): Promise<NonNullable<VersionInfo['fingerprint']>> {
  // A sample whose payload the codec cannot decode (a retired key) tells nothing: the report
  // (and the boot that prints it) goes on; reading that run fails on its own.
  const undecodable = (error: unknown) => {
    if (PayloadUndecodableError.is(error)) return []
    throw error
  }
  const [first] = await store.read(runId, { fromSeq: 1, limit: 1 }).catch(undecodable)
  if (!first || first.type !== RT.runStarted) return 'unrecorded'
  let payload = first.payload as { definitionVersion?: unknown; definitionFingerprint?: unknown }
  if (payload.definitionVersion !== version) {
    const events = await store.read(runId, { fromSeq: 2 }).catch(undecodable)
    const moved = events.findLast((e) => e.type === RT.runMigrated)
    payload = (moved?.payload ?? {}) as typeof payload
  }
  const recorded = payload.definitionFingerprint
  if (typeof recorded !== 'string' || registered === undefined) return 'unrecorded'
  return recorded === registered ? 'match' : 'changed'
}
