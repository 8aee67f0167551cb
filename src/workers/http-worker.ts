import { TerminalError } from '../core/errors.js'
import type { Json } from '../core/json.js'
import type { WorkerTask } from '../core/ports.js'
import { type Backoff, backoffAfter } from '../core/retry.js'

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
   * Report outcomes (`complete`, `fail`, `cancelled`) many per request through
   * `POST /workers/tasks/callbacks` (default true): what finished while a report was on its way
   * goes in the next one. `false`: one `…/callback` request per outcome.
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
 * handler ends after a cancellation was noticed. The effect's `effectId` is the idempotency key
 * to hand to the outside world.
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
    if (!res.ok) throw new Error(`POST ${path}: ${res.status} ${text}`)
    return text ? JSON.parse(text) : null
  }

  const callback = (task: WorkerTask, body: Record<string, unknown>) =>
    post(
      `/runs/${encodeURIComponent(task.runId)}/effects/${encodeURIComponent(task.effectId)}/callback`,
      { attempt: task.attempt, ...body },
    )
  const report =
    options.batchCallbacks === false
      ? (task: WorkerTask, body: Record<string, unknown>) => callback(task, body).then(() => {})
      : batchedReports(post, () => stopping.signal.aborted, options.onError)

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

  /** Claims as many tasks as there are free slots, runs them, and claims again. */
  async function loop(): Promise<void> {
    let failures = 0
    while (!stopping.signal.aborted) {
      if (running.size >= concurrency) {
        await Promise.race(running)
        continue
      }
      try {
        const reply = await post(
          '/workers/tasks/claim',
          {
            types: options.types,
            max: Math.min(concurrency - running.size, 100),
            waitMs: options.waitMs ?? 20_000,
          },
          stopping.signal,
        )
        failures = 0
        for (const task of reply?.tasks ?? []) {
          const done: Promise<void> = runTask(task)
            .catch((error) => options.onError?.(error))
            .finally(() => running.delete(done))
          running.add(done)
        }
      } catch (error) {
        if (stopping.signal.aborted) return
        options.onError?.(error)
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
    },
  }
}

type Post = (path: string, body: unknown, signal?: AbortSignal) => Promise<any>

/**
 * Outcomes reported many per request: one request in flight at a time, and whatever finished
 * meanwhile goes in the next. A report resolves once its request was answered; a failed request
 * is retried with backoff (callbacks are idempotent) until the worker stops.
 */
function batchedReports(
  post: Post,
  stopped: () => boolean,
  onError: ((error: unknown) => void) | undefined,
): (task: WorkerTask, body: Record<string, unknown>) => Promise<void> {
  const MAX_BATCH = 100
  let pending: Array<{ item: Record<string, unknown>; done: () => void }> = []
  let sending = false
  const send = async () => {
    sending = true
    let failures = 0
    while (pending.length > 0) {
      const batch = pending.slice(0, MAX_BATCH)
      try {
        const reply = await post('/workers/tasks/callbacks', {
          callbacks: batch.map((b) => b.item),
        })
        pending = pending.slice(batch.length)
        // An item the engine refused (an invalid event, say) is that outcome's error alone.
        for (const result of reply?.results ?? []) {
          if (result?.error) {
            const { code, message } = result.error
            onError?.(
              new Error(`callback for ${result.runId}/${result.effectId}: ${code} ${message}`),
            )
          }
        }
        for (const b of batch) b.done()
        failures = 0
      } catch (error) {
        onError?.(error)
        if (stopped()) {
          for (const b of pending) b.done()
          pending = []
          break
        }
        await new Promise((resolve) => setTimeout(resolve, backoffAfter(++failures, RETRY)))
      }
    }
    sending = false
  }
  return (task, body) =>
    new Promise<void>((done) => {
      const item = { runId: task.runId, effectId: task.effectId, attempt: task.attempt, ...body }
      pending.push({ item, done })
      if (!sending) void send()
    })
}
