import { TerminalError } from '../core/errors.js'
import type { Json } from '../core/json.js'
import type { WorkerTask } from '../core/ports.js'
import { type Backoff, backoffAfter } from '../core/retry.js'
import { MAX_OUTCOMES, type OutcomeItem, WorkerOutbox } from './worker-outbox.js'

/** A failed claim or callback post is retried, doubling from 100 ms to 5 s. */
const RETRY: Backoff = { initialMs: 100, maxMs: 5_000 }

export interface HttpWorkerContext {
  /** Aborted when the run or the task's thread is cancelled (noticed on heartbeat) or on stop. */
  signal: AbortSignal
  /** Reports progress: moves the heartbeat deadline and checks for cancellation. */
  heartbeat(): Promise<void>
}

/** What a handler returns: a result, or a result with domain events recorded atomically. */
export type HttpWorkerOutcome =
  | Json
  | { result: Json; events: Array<{ type: string; payload?: Json }> }

export interface HttpWorkerOptions {
  /** The engine's base URL, e.g. `http://127.0.0.1:8787`. */
  url: string
  /** The `worker` bearer token. */
  token?: string
  /** Effect types this worker runs (all when absent). */
  types?: string[]
  /** Handlers run at once (default 1); each claim asks for as many tasks as there are free. */
  concurrency?: number
  /**
   * Report outcomes (`complete`, `fail`, `cancelled`) many per request (default true): in the
   * next claim, which asks for as many tasks as that frees, or, while a claim is on its way,
   * through `POST /workers/tasks/callbacks`. `false`: one `…/callback` request per outcome.
   */
  batchCallbacks?: boolean
  /** Long-poll wait per claim (default 20 s). */
  waitMs?: number
  /** Return `{ result, events }` from `handle` and set this to record the events too. */
  withEvents?: boolean
  handle(task: WorkerTask, ctx: HttpWorkerContext): Promise<HttpWorkerOutcome> | HttpWorkerOutcome
  fetch?: typeof fetch
  /** Transport failures (claim or callback); the loop backs off and continues. */
  onError?: (error: unknown) => void
}

export interface HttpWorkerHandle {
  /** Stops claiming, aborts running handlers and resolves once every loop has ended. */
  stop(): Promise<void>
}

/**
 * Runs effect tasks from an engine over HTTP: claims with a long poll, runs `handle`, reports
 * `complete` or `fail` (a `TerminalError` is `retryable: false`), and `cancelled` when the
 * handler ends after a cancellation was noticed. Outcomes ride the next claim (or a batch while
 * one is on its way), so a busy worker makes about one request per `concurrency` tasks. The
 * effect's `effectId` is the idempotency key to hand to the outside world.
 *
 * @example
 * const worker = runHttpWorker({ url, token, types: ['mail.send'], handle: (task) => send(task.input) })
 * await worker.stop()
 */
export function runHttpWorker(options: HttpWorkerOptions): HttpWorkerHandle {
  const doFetch = options.fetch ?? fetch
  const base = options.url.replace(/\/+$/, '')
  const stopping = new AbortController()
  const headers: Record<string, string> = { 'content-type': 'application/json' }
  if (options.token) headers.authorization = `Bearer ${options.token}`

  const post = async (path: string, body: unknown, signal?: AbortSignal): Promise<any> => {
    const res = await doFetch(`${base}${path}`, {
      method: 'POST',
      headers,
      body: JSON.stringify(body),
      signal,
    })
    const text = await res.text()
    if (!res.ok)
      throw Object.assign(new Error(`POST ${path}: ${res.status} ${text}`), {
        status: res.status,
        text,
      })
    return text ? JSON.parse(text) : null
  }

  const callback = (task: WorkerTask, body: Record<string, unknown>) =>
    post(
      `/runs/${encodeURIComponent(task.runId)}/effects/${encodeURIComponent(task.effectId)}/callback`,
      { attempt: task.attempt, ...body },
    )
  const batched = options.batchCallbacks !== false
  /**
   * Whether claims carry outcomes. An engine from before outcomes rode the claim refuses the
   * field (400 naming `callbacks`): the worker then posts every batch on its own, and works on.
   */
  let carryInClaim = batched
  const outbox = new WorkerOutbox(post, RETRY, () => stopping.signal.aborted, options.onError)
  /** Whether the claim loop will take queued outcomes soon (it is not waiting on a request). */
  let loopWillSend = false
  const report = async (task: WorkerTask, body: Record<string, unknown>): Promise<void> => {
    if (!batched) {
      await callback(task, body)
      return
    }
    const item: OutcomeItem = {
      runId: task.runId,
      effectId: task.effectId,
      attempt: task.attempt,
      ...body,
    }
    outbox.add(item, !carryInClaim || !loopWillSend || stopping.signal.aborted)
  }

  const isLive = (task: WorkerTask, state: any) =>
    state?.status === 'running' &&
    (!task.threadId ||
      !['cancelled', 'failed', 'completed'].includes(state.threads?.[task.threadId]?.status))

  async function runTask(task: WorkerTask): Promise<void> {
    const cancel = new AbortController()
    const onStop = () => cancel.abort(new Error('worker stopped'))
    stopping.signal.addEventListener('abort', onStop)
    const ctx: HttpWorkerContext = {
      signal: cancel.signal,
      async heartbeat() {
        const reply = await callback(task, { kind: 'heartbeat' })
        if (!isLive(task, reply?.state)) cancel.abort(new Error('cancelled'))
      },
    }
    try {
      const outcome = await options.handle(task, ctx)
      const body =
        options.withEvents && outcome && typeof outcome === 'object' && 'result' in outcome
          ? { kind: 'complete', result: outcome.result, events: outcome.events }
          : { kind: 'complete', result: outcome ?? null }
      await report(task, body)
    } catch (error) {
      if (cancel.signal.aborted && !stopping.signal.aborted) {
        await report(task, { kind: 'cancelled' })
        return
      }
      if (stopping.signal.aborted) return
      const message = String((error as Error)?.message ?? error)
      await report(task, {
        kind: 'fail',
        error: { code: (error as { code?: string })?.code ?? 'WORKER_ERROR', message },
        retryable: !TerminalError.is(error),
      })
    } finally {
      stopping.signal.removeEventListener('abort', onStop)
    }
  }

  const concurrency = Math.max(1, options.concurrency ?? 1)
  const running = new Set<Promise<void>>()

  /**
   * Claims as many tasks as there are free slots, carrying the outcomes queued since the last
   * claim, runs them, and claims again. A slot is free once its handler has returned.
   */
  async function loop(): Promise<void> {
    let failures = 0
    while (!stopping.signal.aborted) {
      if (running.size >= concurrency) {
        loopWillSend = true
        await Promise.race(running)
        continue
      }
      // Handlers that return at once queue their outcomes first: one claim carries them all.
      loopWillSend = true
      await new Promise((resolve) => setImmediate(resolve))
      loopWillSend = false
      if (stopping.signal.aborted) return
      const carried = carryInClaim ? outbox.take() : []
      try {
        const reply = await post(
          '/workers/tasks/claim',
          {
            types: options.types,
            max: Math.min(concurrency - running.size, MAX_OUTCOMES),
            waitMs: options.waitMs ?? 20_000,
            ...(carried.length > 0 ? { callbacks: carried } : {}),
          },
          stopping.signal,
        )
        failures = 0
        outbox.answered(reply)
        for (const task of reply?.tasks ?? []) {
          const done: Promise<void> = runTask(task)
            .catch((error) => options.onError?.(error))
            .finally(() => running.delete(done))
          running.add(done)
        }
      } catch (error) {
        // Applied or not, the carried outcomes go again: callbacks are idempotent.
        outbox.putBack(carried)
        if (stopping.signal.aborted) return
        if (carried.length > 0 && refusesCarriedOutcomes(error)) {
          carryInClaim = false
          outbox.flush()
          continue
        }
        options.onError?.(error)
        outbox.flush()
        const pause = backoffAfter(++failures, RETRY)
        await new Promise((resolve) => setTimeout(resolve, pause))
      }
    }
  }

  const looping = loop()
  return {
    async stop() {
      stopping.abort()
      await looping
      await Promise.allSettled([...running])
      await outbox.flush()
    },
  }
}

/** An engine that does not know outcomes in a claim answers 400 naming the field. */
function refusesCarriedOutcomes(error: unknown): boolean {
  const { status, text } = error as { status?: number; text?: string }
  return status === 400 && /unknown field\(s\):[^"]*\bcallbacks\b/.test(text ?? '')
}
