import {
  type Command,
  commands,
  type ErrorInfo,
  type Json,
  waitUrl,
} from '../../core/module-api.js'
import { gateStep } from '../approval/index.js'
import type { WorkflowDefinition } from './define-workflow.js'
import type { Directive, MapDirective } from './directives.js'
import { type Ctx, doKey, errorOf, failNode, finish, itemKey, sendKey } from './workflow-state.js'

// The steps of a node that returned a directive: its durable command until the outcome, a
// fan-out's items, a wait URL's wait and send (docs/workflows.md, "Fan-out").

/** A node whose body returned `directive`: the directive's command, until its outcome. */
export function directiveStep(
  def: WorkflowDefinition,
  id: string,
  directive: Directive,
  ctx: Ctx,
): Command[] {
  if (directive.$directive === 'gate') {
    const step = gateStep(directive, ctx.threadId, doKey(id), ctx.outcome)
    return step.result === undefined
      ? step.commands
      : [...step.commands, ...finish(id, step.result)]
  }
  if (directive.$directive === 'waitForUrl') return waitForUrlStep(def, id, directive, ctx)
  if (directive.$directive === 'map') return mapStep(def, id, directive, ctx)
  const outcome = ctx.outcome(doKey(id))
  if (outcome.status === 'completed') return finish(id, outcome.value)
  // Issued and not finished: nothing new (its effect type, a string, needs no executor bound).
  if (outcome.status === 'pending') return []
  if (outcome.status !== 'none') return failNode(def, id, errorOf(outcome, directive.$directive))
  return [directiveCommand(def, id, directive, doKey(id))]
}

/**
 * A fan-out node: its items' commands, lowest index first, up to its concurrency; the node
 * finishes with their results in input order once every item is done, or fails at the first
 * failed item under `'fail'` (cancelling the items still running).
 */
function mapStep(def: WorkflowDefinition, id: string, d: MapDirective, ctx: Ctx): Command[] {
  const n = d.items.length
  const results: Json[] = []
  const out: Command[] = []
  let running = 0
  let done = 0
  let firstFailed: { index: number; error: ErrorInfo } | undefined
  const waiting: number[] = []
  for (let i = 0; i < n; i++) {
    const outcome = ctx.outcome(itemKey(id, i))
    if (outcome.status === 'none') {
      waiting.push(i)
      continue
    }
    if (outcome.status === 'pending') {
      running++
      continue
    }
    done++
    if (outcome.status === 'completed') {
      results[i] =
        d.onItemFailure === 'collect' ? { ok: true, value: outcome.value } : outcome.value
      continue
    }
    const error = errorOf(outcome, `item ${i} (${d.items[i].$directive})`)
    if (d.onItemFailure === 'collect') results[i] = { ok: false, error: error as unknown as Json }
    if (d.onItemFailure === 'fail') firstFailed ??= { index: i, error }
  }
  if (firstFailed) {
    for (let i = 0; i < n; i++) {
      if (ctx.outcome(itemKey(id, i)).status === 'pending') {
        out.push(commands.cancel(itemKey(id, i), `item ${firstFailed.index} of node ${id} failed`))
      }
    }
    const { index, error } = firstFailed
    const failed: ErrorInfo = {
      code: 'ITEM_FAILED',
      message: `item ${index} of ${n} failed: ${error.message}`,
      details: { index, error } as unknown as Json,
    }
    return [...out, ...failNode(def, id, failed)]
  }
  if (done === n) return finish(id, d.onItemFailure === 'skip' ? compact(results, n) : results)
  for (const i of waiting) {
    if (running >= d.concurrency) break
    out.push(directiveCommand(def, id, d.items[i], itemKey(id, i)))
    running++
  }
  return out
}

/** The results of the items that completed, in input order (`'skip'`). */
function compact(results: Json[], n: number): Json[] {
  const out: Json[] = []
  for (let i = 0; i < n; i++) if (i in results) out.push(results[i])
  return out
}

/**
 * A node waiting on a wait URL: the url wait first (so it is open before the URL exists), then
 * the effect that sends the URL, with a `waitUrl` placeholder the runtime fills for its handler.
 */
function waitForUrlStep(
  def: WorkflowDefinition,
  id: string,
  d: Extract<Directive, { $directive: 'waitForUrl' }>,
  ctx: Ctx,
): Command[] {
  const key = doKey(id)
  const waited = ctx.outcome(key)
  if (waited.status === 'completed') return finish(id, waited.value)
  if (waited.status !== 'none' && waited.status !== 'pending') {
    return failNode(def, id, errorOf(waited, 'the wait URL'))
  }
  const sent = ctx.outcome(sendKey(id))
  if (sent.status === 'failed' || sent.status === 'timed_out' || sent.status === 'cancelled') {
    return failNode(def, id, errorOf(sent, `sending the wait URL (${d.effect})`))
  }
  const out: Command[] = []
  if (waited.status === 'none') {
    const url = d.event === undefined ? {} : { input: d.event }
    const on = d.timeoutMs === undefined ? { url } : { url, timeoutMs: d.timeoutMs }
    out.push(commands.wait(on, { key }))
  }
  if (sent.status === 'none') {
    const input = Object.assign({}, d.input, { [d.as]: waitUrl(key, d.url ?? {}) })
    const retry = def.nodes[id].retry
    out.push(
      commands.invoke(d.effect, input, retry ? { key: sendKey(id), retry } : { key: sendKey(id) }),
    )
  }
  return out
}

function directiveCommand(def: WorkflowDefinition, id: string, d: Directive, key: string): Command {
  switch (d.$directive) {
    case 'sleep':
      return commands.wait({ timer: { afterMs: d.ms } }, { key })
    case 'sleepUntil':
      return commands.wait({ timer: { at: d.at } }, { key })
    case 'invoke': {
      const retry = def.nodes[id].retry
      return commands.invoke(d.effect, d.input, retry ? { key, retry } : { key })
    }
    case 'spawn':
      return commands.spawn({ kind: d.kind, name: d.name, version: d.version }, d.input, { key })
    case 'waitFor':
      return commands.wait(
        {
          event: { type: d.type, ...(d.match !== undefined ? { match: d.match } : {}) },
          ...(d.timeoutMs !== undefined ? { timeoutMs: d.timeoutMs } : {}),
        },
        { key },
      )
    default:
      return commands.fail({ code: 'INVALID_DIRECTIVE', message: `node ${id}: unknown directive` })
  }
}
