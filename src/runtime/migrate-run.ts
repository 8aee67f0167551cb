import type { Definition } from '../core/definition.js'
import { definitionLabel } from '../core/definition.js'
import { isTerminal } from '../core/envelope.js'
import {
  DefinitionNotFoundError,
  InvalidInputError,
  InvalidRequestError,
  MigrationRefusedError,
  RunNotFoundError,
} from '../core/errors.js'
import { type RunFold, threadContext } from '../core/fold/index.js'
import type { Json } from '../core/json.js'
import type { MigrationDifference } from '../core/kind.js'
import type { MigrateOptions, RunMigration } from '../core/migration-types.js'
import { RT, type RunMigratedPayload } from '../core/runtime-events.js'
import type { EngineContext } from './context.js'
import type { CallerContext } from './engine-types.js'
import type { RunWriter } from './run-writer.js'
import { validateWith } from './validate.js'

/** `{ toVersion, dryRun? }` checked before the run is read: a 400 with nothing written. */
export function checkMigrateOptions(options: MigrateOptions): Required<MigrateOptions> {
  if (options === null || typeof options !== 'object') {
    throw new InvalidRequestError('a migration needs { toVersion, dryRun? }')
  }
  const { toVersion, dryRun = false } = options
  if (typeof toVersion !== 'string' || toVersion === '') {
    throw new InvalidRequestError('toVersion must be the version to move to (a non-empty string)')
  }
  if (typeof dryRun !== 'boolean') throw new InvalidRequestError('dryRun must be a boolean')
  return { toVersion, dryRun }
}

/**
 * Moves a run not yet finished to another version of its definition (docs/deploys.md,
 * "Migrating runs"), in the run's queue: each of its threads on the run's version checked by
 * its kind against the target, the run's input by the target's schema, its attributes by the
 * target's declarations. Anything unsafe refuses the whole move with the differences
 * (MIGRATION_REFUSED), nothing written; a dry run reports and writes nothing. The move is one
 * `runtime.run.migrated` event, so the fold, replay and every host read the version from the log.
 */
export async function migrateRunOp(
  ctx: EngineContext,
  writer: RunWriter,
  fold: RunFold | null,
  options: Required<MigrateOptions>,
  caller: CallerContext,
): Promise<RunMigration> {
  const runId = writer.runId
  if (!fold) throw new RunNotFoundError(`run ${runId} not found`, { runId })
  const { state } = fold
  const { toVersion, dryRun } = options
  const result: RunMigration = {
    runId,
    kind: state.kind,
    definitionName: state.definitionName,
    fromVersion: state.definitionVersion,
    toVersion,
    threadIds: [],
    dryRun,
    migrated: false,
  }
  const from = registered(ctx, runId, state, state.definitionVersion)
  const to = registered(ctx, runId, state, toVersion)
  if (isTerminal(state.status)) {
    throw new MigrationRefusedError(
      `run ${runId} is ${state.status}: only a run not yet finished moves to another version; nothing was written`,
      { runId, status: state.status, differences: [] },
    )
  }
  if (to === from) return result
  const moving = Object.values(state.threads).filter(
    (t) =>
      !isTerminal(t.status) &&
      t.kind === state.kind &&
      t.definitionName === state.definitionName &&
      t.definitionVersion === state.definitionVersion,
  )
  result.threadIds = moving.map((t) => t.threadId)
  const differences = [
    ...(await runDifferences(fold, to)),
    ...moving.flatMap((t) => threadDifferences(ctx, fold, t.threadId, from, to)),
  ]
  if (differences.length > 0) {
    throw new MigrationRefusedError(
      `run ${runId} cannot move from ${definitionLabel(from)} to ${to.version}: ${differences.map((d) => d.reason).join('; ')}. Nothing was written`,
      {
        runId,
        fromVersion: from.version,
        toVersion,
        differences: differences as unknown as Json,
      },
    )
  }
  if (dryRun) return result
  const payload: RunMigratedPayload = {
    fromVersion: from.version,
    toVersion,
    threadIds: result.threadIds,
  }
  const fingerprint = ctx.fingerprints.of(to)
  if (fingerprint !== undefined) payload.definitionFingerprint = fingerprint
  if (caller.identity !== undefined) payload.by = caller.identity
  // The pass that records it decides every live thread again, now under the target.
  await writer.pass(fold, ({ batch }) => {
    batch.add(RT.runMigrated, payload, { threadId: null, origin: 'operator' })
  })
  result.migrated = true
  return result
}

/** A version of the run's definition, registered here (a migration reads both). */
function registered(
  ctx: EngineContext,
  runId: string,
  state: RunFold['state'],
  version: string,
): Definition {
  const ref = { kind: state.kind, name: state.definitionName, version }
  const definition = ctx.registry.resolve(ref)
  if (definition) return definition
  throw new DefinitionNotFoundError(
    `${definitionLabel(ref)} is not registered on this host: a migration checks the run against both its version and the target, so register both; nothing was written`,
    { runId, kind: ref.kind, definitionName: ref.name, definitionVersion: version },
  )
}

/** What the run as a whole recorded that the target refuses: its input, its attributes. */
async function runDifferences(fold: RunFold, to: Definition): Promise<MigrationDifference[]> {
  const differences: MigrationDifference[] = []
  try {
    await validateWith(to.input, fold.startInput, `${definitionLabel(to)} input`)
  } catch (error) {
    if (!InvalidInputError.is(error)) throw error
    differences.push({
      path: 'input',
      current: fold.startInput,
      target: null,
      reason: `the run's input does not fit ${definitionLabel(to)}'s input schema (${error.message})`,
    })
  }
  for (const [name, value] of Object.entries(fold.state.attributes ?? {})) {
    const type = to.attributes?.[name]
    if (type === undefined || typeof value !== type) {
      differences.push({
        path: `attributes.${name}`,
        current: value,
        target: type ?? null,
        reason: `the run's attribute ${name} is not declared as a ${typeof value} by ${definitionLabel(to)}`,
      })
    }
  }
  return differences
}

/**
 * What thread `threadId` recorded that the target does not fit: its kind's own check, or
 * without one, whether both versions declare the same shape.
 */
function threadDifferences(
  ctx: EngineContext,
  fold: RunFold,
  threadId: string,
  from: Definition,
  to: Definition,
): MigrationDifference[] {
  const { kind } = threadContext(ctx.registry, fold, threadId)
  const state = fold.books[threadId].kindState
  if (kind.migrationDifferences) {
    return kind.migrationDifferences(state, from, to).map((d) => ({ ...d, threadId }))
  }
  if (ctx.fingerprints.of(from) === ctx.fingerprints.of(to)) return []
  return [
    {
      path: 'shape',
      current: from.shape ?? null,
      target: to.shape ?? null,
      reason: `kind ${from.kind} declares no migration check, and the two versions' shapes differ`,
      threadId,
    },
  ]
}
