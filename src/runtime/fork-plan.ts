import { definitionLabel } from '../core/definition.js'
import type { EventEnvelope } from '../core/envelope.js'
import { isTerminal } from '../core/envelope.js'
import {
  DefinitionNotFoundError,
  InvalidRequestError,
  RunNotFoundError,
  StartConflictError,
} from '../core/errors.js'
import { emptyFold, foldEvents, type RunFold } from '../core/fold/index.js'
import type { ForkedFrom, ForkOptions } from '../core/fork-types.js'
import type { Json } from '../core/json.js'
import type { KindDefinition } from '../core/kind.js'
import type { RunStartedPayload } from '../core/runtime-events.js'
import { RT } from '../core/runtime-events.js'
import type { EngineContext } from './context.js'
import { checkId, requireJson, validateWith } from './validate.js'
import { metaOf } from './wake-pass.js'

/** A fork ready to write: the new run's whole log, folded, with nothing written yet. */
export interface ForkPlan {
  runId: string
  events: EventEnvelope[]
  fold: RunFold
  forkedFrom: ForkedFrom
}

const OPTIONS = ['atSeq', 'atNode', 'input', 'runId']
/** Effect statuses that are over for good: a copy never runs them again. */
const SETTLED = new Set(['completed', 'cancelled'])
const PAGE = 1000

/**
 * Plans `fork(runId, options)` (docs/operating-runs.md, "Fork"): reads the source run, finds
 * the cut, and builds the new run's log from the events before it. Everything is checked here,
 * before the caller writes: a bad option, an unknown run or node, a seq out of range or inside
 * one recorded batch, an effect still open at the cut. The source is only read.
 */
export async function planFork(
  ctx: EngineContext,
  sourceId: string,
  options: ForkOptions,
): Promise<ForkPlan> {
  const opts = checkOptions(options)
  const source = await readLog(ctx, sourceId)
  const started = source[0].payload as unknown as RunStartedPayload
  const definition = ctx.registry.resolve({
    kind: started.kind,
    name: started.definitionName,
    version: started.definitionVersion,
  })
  if (!definition) {
    throw new DefinitionNotFoundError(
      `run ${sourceId} is a ${definitionLabel({ kind: started.kind, name: started.definitionName, version: started.definitionVersion })} run, which this engine does not register: a fork runs on the registered code; nothing was written`,
      { runId: sourceId },
    )
  }
  if (source.some((e) => e.type === RT.runQueued || e.type === RT.runAdmitted)) {
    throw new InvalidRequestError(
      `run ${sourceId} was placed by its definition's flow control: a fork would bypass its queue, so it is refused; start the run again instead. Nothing was written`,
      { runId: sourceId },
    )
  }
  const atSeq =
    opts.atNode !== undefined
      ? nodeCut(ctx, source, started, opts.atNode)
      : seqCut(ctx, source, started, opts.atSeq as number)
  const forkedFrom = { runId: sourceId, atSeq }
  const runId = opts.runId ?? ctx.ids.runId()
  if ((await ctx.store.tail(runId)) > 0) {
    throw new StartConflictError(`run ${runId} exists already: fork into a new run id`, { runId })
  }
  const input =
    opts.input !== undefined
      ? requireJson(
          await validateWith(definition.input, opts.input, `${definitionLabel(definition)} input`),
          `${definitionLabel(definition)} input`,
          ctx.options.maxEventBytes,
        )
      : undefined
  const events = copyPrefix(ctx, source.slice(0, atSeq - 1), runId, forkedFrom, started, input)
  const fold = foldEvents(ctx.registry, runId, events, emptyFold(runId))
  const root = fold.state.threads[fold.state.rootThreadId]
  if (!root || isTerminal(root.status) || fold.state.status !== 'running') {
    throw new InvalidRequestError(
      `run ${sourceId} before seq ${atSeq} has ${root ? `a ${root.status} root thread` : 'no root thread yet'}: nothing would run; fork at a later seq. Nothing was written`,
      { runId: sourceId, atSeq },
    )
  }
  // A shape changed in place under the version would fail the fork's first pass: refused now.
  ctx.fingerprints.check(fold, fold.state.rootThreadId, definition)
  return { runId, events, fold, forkedFrom }
}

/**
 * Writes a planned fork in the new run's queue: its whole log as one batch, with the meta its
 * fold gives. A run with its id written since the plan is START_CONFLICT, nothing written.
 */
export async function writeFork(
  ctx: EngineContext,
  fold: RunFold | null,
  plan: ForkPlan,
): Promise<void> {
  if (fold) {
    throw new StartConflictError(`run ${plan.runId} exists already: fork into a new run id`, {
      runId: plan.runId,
    })
  }
  await ctx.store.append(plan.runId, plan.events, { expectedSeq: 0, meta: metaOf(plan.fold) })
  ctx.log.info(
    { runId: plan.runId, forkedFrom: plan.forkedFrom },
    `run ${plan.runId} forked from run ${plan.forkedFrom.runId} at seq ${plan.forkedFrom.atSeq}`,
  )
}

function checkOptions(options: ForkOptions): ForkOptions {
  if (options === null || typeof options !== 'object') {
    throw new InvalidRequestError('fork needs options: { atSeq } or { atNode }')
  }
  const unknown = Object.keys(options).filter((key) => !OPTIONS.includes(key))
  if (unknown.length > 0) {
    throw new InvalidRequestError(`unknown fork option(s): ${unknown.join(', ')}`, {
      unknown,
      allowed: OPTIONS,
    })
  }
  const { atSeq, atNode, runId } = options
  if ((atSeq === undefined) === (atNode === undefined)) {
    throw new InvalidRequestError('fork needs exactly one of atSeq and atNode')
  }
  if (atSeq !== undefined && (!Number.isSafeInteger(atSeq) || atSeq < 1)) {
    throw new InvalidRequestError(`atSeq must be a positive integer, got ${JSON.stringify(atSeq)}`)
  }
  if (atNode !== undefined && (typeof atNode !== 'string' || atNode.length === 0)) {
    throw new InvalidRequestError('atNode must be a non-empty string')
  }
  if (runId !== undefined) checkId(runId, 'runId')
  return options
}

async function readLog(ctx: EngineContext, runId: string): Promise<EventEnvelope[]> {
  checkId(runId, 'runId')
  // Up to the tail when the fork began: a running source may append meanwhile.
  const tail = await ctx.store.tail(runId)
  if (tail === 0) throw new RunNotFoundError(`run ${runId} not found`, { runId })
  const events: EventEnvelope[] = []
  while ((events.at(-1)?.seq ?? 0) < tail) {
    const fromSeq = (events.at(-1)?.seq ?? 0) + 1
    const page = await ctx.store.read(runId, { fromSeq, limit: Math.min(PAGE, tail - fromSeq + 1) })
    if (page.length === 0) break
    events.push(...page)
  }
  if (events[0]?.seq !== 1) {
    throw new InvalidRequestError(
      `run ${runId} was trimmed (its log starts at seq ${events[0]?.seq}): a fork needs the whole log; nothing was written`,
      { runId, head: events[0]?.seq ?? null },
    )
  }
  return events
}

const kindOf = (ctx: EngineContext, started: RunStartedPayload): KindDefinition | undefined =>
  ctx.registry.kinds.get(started.kind)

/** Whether `event` is the first event of its node in the root thread (a cut before it is safe). */
function startsNode(
  kind: KindDefinition | undefined,
  source: readonly EventEnvelope[],
  event: EventEnvelope,
  root: string,
): boolean {
  if (!kind?.nodeOf || event.threadId !== root) return false
  const node = kind.nodeOf(event)
  if (node === undefined) return false
  return source.find((e) => e.threadId === root && kind.nodeOf?.(e) === node) === event
}

/**
 * `atNode`: before the node's first event in the root thread, moved earlier past every effect
 * still open there (its copy would run again under the source's effect id, which an external
 * service may have seen), so the node, its dependents and those effects run anew.
 */
function nodeCut(
  ctx: EngineContext,
  source: readonly EventEnvelope[],
  started: RunStartedPayload,
  node: string,
): number {
  const kind = kindOf(ctx, started)
  if (!kind?.nodeOf) {
    throw new InvalidRequestError(
      `a ${started.kind} run has no nodes: fork it at a seq (atSeq); nothing was written`,
    )
  }
  const root = started.rootThreadId
  const first = source.find((e) => e.threadId === root && kind.nodeOf?.(e) === node)
  if (!first) {
    const nodes = [
      ...new Set(source.flatMap((e) => (e.threadId === root ? (kind.nodeOf?.(e) ?? []) : []))),
    ]
    throw new InvalidRequestError(
      `run ${source[0].runId} has no event of node "${node}" (it never started, or is not a node of ${started.definitionName}); nodes with events: ${nodes.join(', ') || 'none'}. Nothing was written`,
      { runId: source[0].runId, atNode: node, nodes },
    )
  }
  let cut = first.seq
  for (let open = openEffects(ctx, source, cut); open.length > 0; ) {
    cut = Math.min(...open.map((o) => o.requestedAt))
    open = openEffects(ctx, source, cut)
  }
  return cut
}

/**
 * `atSeq`: copies seqs below it. It must fall between two recorded batches (a batch is written
 * at one time, so a change of `ts` marks one), or at a node's first event: a cut inside a batch
 * could keep half of what one command recorded (a wait without its timer). No effect may be
 * open at the cut.
 */
function seqCut(
  ctx: EngineContext,
  source: readonly EventEnvelope[],
  started: RunStartedPayload,
  atSeq: number,
): number {
  const runId = source[0].runId
  const tail = source.length
  if (atSeq < 2 || atSeq > tail) {
    throw new InvalidRequestError(
      `atSeq must be from 2 to ${tail} (run ${runId}'s last seq): the fork copies the events before it; nothing was written`,
      { runId, atSeq, tail },
    )
  }
  const event = source[atSeq - 1]
  const between = event.ts !== source[atSeq - 2].ts
  if (!between && !startsNode(kindOf(ctx, started), source, event, started.rootThreadId)) {
    throw new InvalidRequestError(
      `seq ${atSeq} of run ${runId} was recorded in one batch with seq ${atSeq - 1}: fork where a batch begins (the events' time changes) or at a node (atNode); nothing was written`,
      { runId, atSeq },
    )
  }
  const open = openEffects(ctx, source, atSeq)
  if (open.length > 0) {
    const [first] = open
    throw new InvalidRequestError(
      `effect ${first.effectId} (${first.type}) is not over at seq ${atSeq} of run ${runId}: a fork must not run it again under the same id. Fork at or before seq ${first.requestedAt} (its request), or after its outcome; nothing was written`,
      { runId, atSeq, effects: open as unknown as Json },
    )
  }
  return atSeq
}

interface OpenEffect {
  effectId: string
  type: string
  requestedAt: number
}

/** Effects requested before `cut` and not completed or cancelled by then. */
function openEffects(
  ctx: EngineContext,
  source: readonly EventEnvelope[],
  cut: number,
): OpenEffect[] {
  const prefix = source.slice(0, cut - 1)
  const fold = foldEvents(ctx.registry, source[0].runId, prefix, emptyFold(source[0].runId))
  const open: OpenEffect[] = []
  for (const event of prefix) {
    if (event.type !== RT.effectRequested) continue
    const { effectId, type } = event.payload as { effectId: string; type: string }
    const record = fold.effects[effectId]
    if (record && !SETTLED.has(record.status)) open.push({ effectId, type, requestedAt: event.seq })
  }
  return open
}

/**
 * The new run's events: the prefix with the new run id, new event ids (causations follow
 * them) and the fork's time, no start idempotency key (the source's key names the source), and
 * the start recording the source and the cut, a fresh deadline and any new input.
 */
function copyPrefix(
  ctx: EngineContext,
  prefix: readonly EventEnvelope[],
  runId: string,
  forkedFrom: ForkedFrom,
  started: RunStartedPayload,
  input: Json | undefined,
): EventEnvelope[] {
  const now = ctx.clock.now()
  const ids = new Map<string, string>()
  for (const event of prefix) ids.set(event.id, ctx.ids.eventId())
  return prefix.map((event) => {
    const copy: EventEnvelope = { ...event, runId, id: ids.get(event.id) as string, ts: now }
    if (event.causationId !== undefined) {
      copy.causationId = ids.get(event.causationId) ?? event.causationId
    }
    if (event.seq === 1) {
      delete copy.idempotencyKey
      const payload: RunStartedPayload = { ...started, forkedFrom }
      if (input !== undefined) payload.input = input
      if (started.timeoutMs !== undefined) payload.deadlineAt = now + started.timeoutMs
      copy.payload = payload as unknown as Json
    } else if (
      input !== undefined &&
      event.type === RT.threadStarted &&
      (event.payload as { threadId?: string }).threadId === started.rootThreadId
    ) {
      copy.payload = { ...(event.payload as object), input } as Json
    }
    return copy
  })
}
