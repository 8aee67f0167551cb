import type { StartOptions, WaitFor } from '../core/api-types.js'
import { checkRunAttributes, type RunAttributes } from '../core/attributes.js'
import type { Definition } from '../core/definition.js'
import { digest128 } from '../core/digest.js'
import type { EventInput } from '../core/envelope.js'
import {
  FlowKeyFullError,
  IdempotencyConflictError,
  InvalidEventError,
  InvalidRequestError,
  RunNotFoundError,
  StartConflictError,
} from '../core/errors.js'
import type { FlowPlace } from '../core/flow.js'
import { LOG_PROTOCOL_VERSION, type RunFold } from '../core/fold/index.js'
import { canonicalJson, type Json } from '../core/json.js'
import { RT, type RunStartedPayload, type SignalReceivedPayload } from '../core/runtime-events.js'
import { acceptInputs } from './accept-inputs.js'
import type { EngineContext, FlowAdmissions, FlowEntered } from './context.js'
import { checkDeclaredSignals } from './declared-signals.js'
import type { CallerContext, SignalOptions } from './engine-types.js'
import { cancelSeed, retryEffectSeed } from './operator-seeds.js'
import { addRootThread } from './root-thread.js'
import type { RunWriter } from './run-writer.js'
import {
  type CheckedEvent,
  checkIdempotencyKey,
  checkRunTimeout,
  checkWait,
  requireJson,
  validateSignalEvents,
  validateWith,
} from './validate.js'
import type { Seed } from './wake-pass.js'

interface PreparedStart {
  definition: Definition
  input: Json
  /** Its place in the definition's queue, with flow control (docs/flow-control.md). */
  place: FlowPlace | null
  /** Where flow control put it (`FlowAdmissions.enter`), once entered. */
  entered?: FlowEntered
  /** The run's deadline in ms from its start (the start's `timeoutMs`, else the definition's). */
  timeoutMs?: number
  /** The start's attributes, checked against the definition's declarations. */
  attributes?: RunAttributes
}

/** Start: validate before anything is written; create the run or recognise a retry of it. */
export const startOp = {
  async prepare(
    ctx: EngineContext,
    definition: Definition,
    input: unknown,
    options: StartOptions,
  ): Promise<PreparedStart> {
    const name = `${definition.kind} ${definition.name}@${definition.version}`
    const timeoutMs =
      options.timeoutMs !== undefined
        ? checkRunTimeout(options.timeoutMs, `start of ${name}`)
        : checkRunTimeout(definition.timeoutMs, name)
    const label = `${name} input`
    const value = await validateWith(definition.input, input, label)
    const json = requireJson(value, label, ctx.options.maxEventBytes)
    const flowOptions = checkFlowOptions(options)
    checkDelayable(ctx, flowOptions.startAt)
    const place = ctx.flow?.place(definition, json, ctx.clock.now(), flowOptions) ?? null
    const prepared: PreparedStart = { definition, input: json, place }
    if (timeoutMs !== undefined) prepared.timeoutMs = timeoutMs
    if (options.attributes !== undefined) {
      const attributes = checkRunAttributes(
        `start of ${name}`,
        definition.attributes,
        options.attributes,
      )
      if (Object.keys(attributes).length > 0) prepared.attributes = attributes as RunAttributes
    }
    return prepared
  },

  async run(
    writer: RunWriter,
    fold: RunFold | null,
    prepared: PreparedStart,
    options: StartOptions,
  ): Promise<{ threadId: string }> {
    const { ctx, runId } = writer
    const { definition, input } = prepared
    if (fold) {
      const mismatched: string[] = []
      if (fold.state.kind !== definition.kind) mismatched.push('kind')
      if (fold.state.definitionName !== definition.name) mismatched.push('definitionName')
      if (fold.state.definitionVersion !== definition.version) {
        // A retry of the start of a run migrated since names the version it started on.
        const [first] = await ctx.store.read(runId, { fromSeq: 1, limit: 1 })
        const started = first?.type === RT.runStarted ? first.payload : undefined
        if ((started as RunStartedPayload | undefined)?.definitionVersion !== definition.version)
          mismatched.push('definitionVersion')
      }
      if (canonicalJson(fold.startInput) !== canonicalJson(input)) mismatched.push('input')
      if (fold.startKey !== options.idempotencyKey) mismatched.push('idempotencyKey')
      if (options.threadId !== undefined && options.threadId !== fold.state.rootThreadId)
        mismatched.push('threadId')
      if (mismatched.length > 0) {
        throw new StartConflictError(
          `run ${runId} already exists with a different ${mismatched.join(', ')}`,
          { runId, fields: mismatched },
        )
      }
      return { threadId: fold.state.rootThreadId }
    }
    const threadId = options.threadId ?? ctx.ids.threadId()
    const { place } = prepared
    const flow = place ? (ctx.flow as FlowAdmissions) : undefined
    // Queued (and, when a slot is free, admitted) in the store before the log is written: a
    // start that dies in between leaves an entry without a log, which is never admitted, or
    // an admitted one whose hold lapses (flow-admission.ts). A start whose slot its first
    // append takes (`entered.admit`) writes both in one transaction.
    let entered =
      !flow || !place
        ? undefined
        : placed(runId, prepared.entered ?? (await flow.enter(runId, place, input)))
    ctx.observe({
      type: 'run.started',
      runId,
      kind: definition.kind,
      definitionName: definition.name,
    })
    const seed = { prepared, options, threadId }
    try {
      await writer.pass(writer.create(), startSeed(writer, seed, entered), 'input')
    } catch (error) {
      if (!flow || !place || !entered?.admit || !FlowKeyFullError.is(error)) throw error
      // The key was full (or runs wait in it): the run queues the ordinary way.
      writer.discard()
      entered = placed(runId, await flow.enter(runId, place, input, false))
      await writer.pass(writer.create(), startSeed(writer, seed, entered), 'input')
    }
    const admitted = entered === undefined || entered.admitted
    if (place && admitted && ctx.observing)
      ctx.observe({ type: 'flow.admitted', runId, queue: place.queue, waitedMs: 0 })
    // A slot freed between the store's answer and this commit found no run to admit: ask again.
    if (flow && place && !admitted) flow.kick(place.queue, place.key)
    return { threadId }
  },
}

/** Where flow control put a new run: its own place (another run's is a retry's conflict). */
type Placed = Exclude<FlowEntered, { joined: string }>

function placed(runId: string, entered: FlowEntered): Placed {
  if (entered.joined === undefined) return entered
  throw new StartConflictError(
    `run ${runId} was started concurrently with another start of it; retry the start`,
    { runId, fields: [] },
  )
}

/**
 * The first commit of a new run: `runtime.run.started`, then `runtime.run.queued`, or (admitted,
 * or without flow control) `runtime.run.admitted` and the root thread. A run whose slot its
 * first append takes carries the admission in that append (`AppendOptions.admit`).
 */
function startSeed(
  writer: RunWriter,
  {
    prepared,
    options,
    threadId,
  }: { prepared: PreparedStart; options: StartOptions; threadId: string },
  entered: Placed | undefined,
): Seed {
  const { ctx } = writer
  const { definition, input, timeoutMs, attributes, place } = prepared
  return ({ batch, now }) => {
    batch.idempotencyKey = options.idempotencyKey
    if (entered?.admit) batch.admit = entered.admit
    const started: RunStartedPayload & Record<string, Json> = {
      kind: definition.kind,
      definitionName: definition.name,
      definitionVersion: definition.version,
      input,
      rootThreadId: threadId,
      protocolVersion: LOG_PROTOCOL_VERSION,
    }
    if (timeoutMs !== undefined) {
      started.timeoutMs = timeoutMs
      started.deadlineAt = now + timeoutMs
    }
    if (attributes !== undefined) started.attributes = attributes
    batch.add(RT.runStarted, ctx.fingerprints.stamp(definition, started), {
      threadId: null,
      origin: 'external',
      idempotencyKey: options.idempotencyKey,
    })
    if (place && entered && !entered.admitted) {
      const limit = (ctx.flow as FlowAdmissions).limitOf(place.queue)
      const { queue, key, priority } = place
      const queued = { queue, key, priority, startAt: entered.startAt, reason: entered.reason }
      batch.add(RT.runQueued, { ...queued, limit }, { threadId: null })
      return
    }
    if (place) {
      const admittedAt = entered?.at ?? now
      const queue = { queue: place.queue, key: place.key, waitedMs: 0, admittedAt }
      batch.add(RT.runAdmitted, queue, { threadId: null })
    }
    addRootThread(ctx, batch, definition, threadId, input)
  }
}

/**
 * A start's `priority` and `startAt` (docs/flow-control.md): finite numbers, else a 400 with
 * nothing written. A `startAt` needs a store with flow queues.
 */
function checkFlowOptions(options: StartOptions): { priority?: number; startAt?: number } {
  const { priority, startAt } = options
  if (priority !== undefined && (typeof priority !== 'number' || !Number.isFinite(priority))) {
    throw new InvalidRequestError(
      `priority must be a finite number, got ${JSON.stringify(priority)}`,
    )
  }
  if (startAt !== undefined && (typeof startAt !== 'number' || !Number.isFinite(startAt))) {
    throw new InvalidRequestError(
      `startAt must be a finite number (epoch ms), got ${JSON.stringify(startAt)}`,
    )
  }
  return { priority, startAt }
}

/** A delayed start needs the store's flow queues (a custom store may have none). */
function checkDelayable(ctx: EngineContext, startAt: number | undefined): void {
  if (startAt !== undefined && startAt > ctx.clock.now() && !ctx.flow) {
    throw new InvalidRequestError(
      'startAt needs a store with flow queues (memoryStore, sqliteStore and postgresStore have them)',
    )
  }
}

interface PreparedSignal {
  events: CheckedEvent[]
  wait: WaitFor
  /** Digest of the validated events (canonical JSON), when the signal has a key. */
  digest?: string
}

/**
 * Signal: validated before the queue, checked against the run in it. A repeated key with the
 * same events (canonical JSON: key order ignored) is a no-op, also after trims and restarts;
 * with other events it is `IDEMPOTENCY_CONFLICT`. Nothing is written for a refused signal.
 */
export const signalOp = {
  /** Everything about the request that needs no run: the key, `wait`, the events. */
  async prepare(
    ctx: EngineContext,
    events: readonly EventInput[],
    options: SignalOptions,
  ): Promise<PreparedSignal> {
    if (options.idempotencyKey !== undefined) checkIdempotencyKey(options.idempotencyKey)
    const wait = checkWait(options.wait)
    const checked = await validateSignalEvents(ctx.registry, events, ctx.options.maxEventBytes)
    if (options.idempotencyKey === undefined) return { events: checked, wait }
    return { events: checked, wait, digest: signalDigest(checked) }
  },

  async run(
    writer: RunWriter,
    fold: RunFold | null,
    prepared: PreparedSignal,
    request: SignalOptions,
  ): Promise<void> {
    const { ctx, runId } = writer
    if (!fold) throw new RunNotFoundError(`run ${runId} not found`, { runId })
    const key = request.idempotencyKey
    if (key !== undefined && fold.signalKeys[key] !== undefined) {
      const recorded = fold.signalDigests?.[key]
      // Keys recorded before digests were cannot be compared: a retry, as they always were.
      if (recorded === undefined || recorded === prepared.digest) return
      throw new IdempotencyConflictError(
        `run ${runId}: idempotency key "${key}" was already used for a different signal (seq ${fold.signalKeys[key]}); use a new key for a new request`,
        { runId, idempotencyKey: key, seq: fold.signalKeys[key] },
      )
    }
    const { events } = prepared
    for (const event of events) {
      if (event.threadId !== undefined && !fold.state.threads[event.threadId]) {
        throw new InvalidEventError(`run ${runId} has no thread ${event.threadId}`, {
          runId,
          threadId: event.threadId,
        })
      }
    }
    const declared = await checkDeclaredSignals(
      ctx.registry,
      fold,
      prepared.events,
      ctx.options.maxEventBytes,
    )
    const payloads = acceptInputs(fold, declared, request.identity, ctx.options.maxEventBytes)
    await writer.pass(
      fold,
      ({ batch }) => {
        batch.idempotencyKey = key
        if (key !== undefined) {
          const received: SignalReceivedPayload = {
            idempotencyKey: key,
            digest: prepared.digest as string,
            events: events.length,
          }
          batch.add(RT.signalReceived, received, {
            threadId: null,
            origin: 'external',
          })
        }
        events.forEach((event, i) => {
          batch.add(event.type, payloads[i], {
            threadId: event.threadId ?? null,
            origin: 'external',
            idempotencyKey: i === 0 ? key : undefined,
          })
        })
      },
      'input',
    )
  },
}

/** The digest that tells a retry (same events) from a conflict (another body, same key). */
const signalDigest = (events: readonly CheckedEvent[]): string =>
  digest128(
    canonicalJson(
      events.map((e) =>
        e.threadId === undefined
          ? { type: e.type, payload: e.payload }
          : { type: e.type, payload: e.payload, threadId: e.threadId },
      ),
    ),
  )

/** Cancel: recorded, then the thread and its descendants are cancelled deepest first. */
export async function cancelOp(
  writer: RunWriter,
  fold: RunFold | null,
  threadId: string | undefined,
): Promise<void> {
  const runId = writer.runId
  if (!fold) throw new RunNotFoundError(`run ${runId} not found`, { runId })
  const seed = cancelSeed(fold, threadId)
  if (seed) await writer.pass(fold, seed)
}

/**
 * Operator retry of one effect from `ambiguous`, a timeout or a final failure. A final failure
 * that failed its thread and run re-opens them (the fold does that on `reason: 'operator'`).
 */
export async function retryEffectOp(
  writer: RunWriter,
  fold: RunFold | null,
  effectId: string,
  caller: CallerContext,
): Promise<void> {
  const seed = retryEffectSeed(writer.runId, fold, effectId, caller)
  await writer.pass(fold!, seed)
}
