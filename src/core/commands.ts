import type { RunAttributeValue } from './attributes.js'
import type { Definition, DefinitionRef } from './definition.js'
import type { EffectDefinition } from './effect.js'
import type { ErrorInfo } from './errors.js'
import type { Json } from './json.js'
import type { RetryPolicy } from './retry.js'

/**
 * What a thread waits on. Relative times are fixed by the writer when it registers the wait.
 * `expect` is recorded with the wait and shown to input checks (`InputContext.waiting`): what
 * the waiter will accept beyond `match` (a gate's actions); matching does not read it.
 */
export type WaitCondition =
  | {
      event: { type: string; match?: Json; threadId?: string; expect?: Json }
      timeoutMs?: number
      timeoutAt?: number
    }
  | { timer: { at: number } | { afterMs: number } }
  | {
      /**
       * A wait completed through a wait URL (docs/schedules.md, "Wait URLs"): only a POST to
       * a URL made for it (`waitUrl(key)` in an effect's input) satisfies it, with the posted
       * JSON as its value. `input` names a module input (`defineInput`) whose schema and
       * `accept` check the posted JSON first.
       */
      url: { input?: string }
      timeoutMs?: number
      timeoutAt?: number
    }

export type Command =
  | {
      type: 'invoke'
      key: string
      effect: string | EffectDefinition
      input: unknown
      retry?: RetryPolicy
      timeoutMs?: number
    }
  | { type: 'spawn'; key: string; definition: Definition | DefinitionRef; input: unknown }
  | { type: 'wait'; key: string; on: WaitCondition }
  | { type: 'emit'; key?: string; event: string; payload: Json }
  | { type: 'cancel'; key: string; reason?: string }
  /**
   * Sets the run's attributes (null removes one), each declared by the run's definition
   * (docs/operating-runs.md, "Attributes"). Recorded only when it changes them, so a kind that
   * issues it on every decide writes once.
   */
  | { type: 'attributes'; set: Record<string, RunAttributeValue | null> }
  | { type: 'complete'; output: unknown }
  | { type: 'fail'; error: ErrorInfo }

/**
 * Command constructors for kinds' `decide`. Keys make commands idempotent: a keyed
 * command already issued in this thread is not issued again.
 */
export const commands = {
  invoke(
    effect: string | EffectDefinition,
    input: unknown,
    options: { key: string; retry?: RetryPolicy; timeoutMs?: number },
  ): Command {
    // Object.assign, not a spread after the literal's keys: V8's slow path (copy.ts).
    return Object.assign({ type: 'invoke' as const, effect, input }, options)
  },
  spawn(definition: Definition | DefinitionRef, input: unknown, options: { key: string }): Command {
    return { type: 'spawn', definition, input, key: options.key }
  },
  wait(on: WaitCondition, options: { key: string }): Command {
    return { type: 'wait', on, key: options.key }
  },
  emit(event: string, payload: Json = null, options?: { key?: string }): Command {
    return { type: 'emit', event, payload, key: options?.key }
  },
  cancel(key: string, reason?: string): Command {
    return { type: 'cancel', key, reason }
  },
  attributes(set: Record<string, RunAttributeValue | null>): Command {
    return { type: 'attributes', set }
  },
  complete(output: unknown = null): Command {
    return { type: 'complete', output }
  },
  fail(error: ErrorInfo | string): Command {
    return {
      type: 'fail',
      error: typeof error === 'string' ? { code: 'FAILED', message: error } : error,
    }
  },
}

/**
 * The recorded outcome of a keyed command, as a kind sees it in `decide` (`ctx.outcome(key)`).
 *
 * `reopenedAt`: an operator retry (`retryEffect`, `POST /runs/:id/effects/:effectId/retry`)
 * re-opened the command after it failed, at this seq (the retry's
 * `runtime.effect.retry.scheduled`; the latest one when retried more than once). The command
 * is pending again, then settles as usual and keeps the mark. It is set on the failed effect's
 * command and on the spawn commands of the parent threads its failure had failed. A kind that
 * recorded the failure in its own state compares it with the seq of the event that recorded
 * the failure: a later `reopenedAt` means the work is live again.
 */
export type Outcome =
  | { status: 'none'; reopenedAt?: undefined }
  | ((
      | { status: 'pending' }
      | { status: 'completed'; value: Json }
      | { status: 'failed'; error: ErrorInfo }
      | { status: 'timed_out' }
      | { status: 'cancelled'; reason?: string }
    ) & { reopenedAt?: number })
