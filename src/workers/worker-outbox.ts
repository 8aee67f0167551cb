import { type Backoff, backoffAfter } from '../core/retry.js'

/** What a worker posts: a path, a JSON body, an optional abort signal; resolves to the reply. */
export type WorkerPost = (path: string, body: unknown, signal?: AbortSignal) => Promise<any>

/** One outcome on its way: a callback item of `POST /workers/tasks/callbacks`. */
export type OutcomeItem = Record<string, unknown> & { runId: string; effectId: string }

/** Most outcomes per request (the routes' limit). */
export const MAX_OUTCOMES = 100

/**
 * Outcomes waiting to be reported (docs/workers.md, "Outcomes ride the claim"). The claim loop
 * takes them into its next claim; while a claim is on its way (or the loop backs off) they go
 * in a `POST /workers/tasks/callbacks` instead, one request in flight at a time, whatever
 * finished meanwhile in the next. A failed request puts its outcomes back (callbacks are
 * idempotent) and is retried with backoff until the worker stops.
 */
export class WorkerOutbox {
  private pending: OutcomeItem[] = []
  private sending = false
  private idle: Promise<void> = Promise.resolve()

  constructor(
    private readonly post: WorkerPost,
    private readonly retry: Backoff,
    private readonly stopped: () => boolean,
    private readonly onError: ((error: unknown) => void) | undefined,
  ) {}

  get size(): number {
    return this.pending.length
  }

  /** Queues an outcome; `direct`: the claim loop will not send soon, so post a batch now. */
  add(item: OutcomeItem, direct: boolean): void {
    this.pending.push(item)
    if (direct) this.sendBatches()
  }

  /** Takes up to a request's worth of outcomes to carry in a claim. */
  take(): OutcomeItem[] {
    return this.pending.splice(0, MAX_OUTCOMES)
  }

  /** Outcomes whose request failed or was cut off go out again (ahead of newer ones). */
  putBack(items: OutcomeItem[]): void {
    this.pending.unshift(...items)
  }

  /** Reports the items the engine refused (an invalid event, say): that outcome's error alone. */
  answered(reply: any): void {
    for (const result of reply?.results ?? []) {
      if (!result?.error) continue
      const { code, message } = result.error
      this.onError?.(
        new Error(`callback for ${result.runId}/${result.effectId}: ${code} ${message}`),
      )
    }
  }

  /** Posts what is pending (also on stop); resolves once nothing is pending or in flight. */
  flush(): Promise<void> {
    this.sendBatches()
    return this.idle
  }

  private sendBatches(): void {
    if (this.sending || this.pending.length === 0) return
    this.sending = true
    this.idle = this.drain().finally(() => {
      this.sending = false
    })
  }

  private async drain(): Promise<void> {
    let failures = 0
    while (this.pending.length > 0) {
      const batch = this.take()
      try {
        this.answered(await this.post('/workers/tasks/callbacks', { callbacks: batch }))
        failures = 0
      } catch (error) {
        this.onError?.(error)
        if (this.stopped()) {
          this.pending = []
          return
        }
        this.putBack(batch)
        await new Promise((resolve) => setTimeout(resolve, backoffAfter(++failures, this.retry)))
      }
    }
  }
}
