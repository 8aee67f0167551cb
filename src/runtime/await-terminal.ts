import type { ResultOptions } from '../core/api-types.js'
import { type EventEnvelope, isTerminal, type RunState } from '../core/envelope.js'
import { EngineStoppedError, InvalidRequestError, ResultTimeoutError } from '../core/errors.js'
import type { Json } from '../core/json.js'
import type { Clock } from '../core/ports.js'
import { outcomeOf } from '../core/run-outcome.js'
import { RT } from '../core/runtime-events.js'
import { holdProcessUntil } from './keep-alive.js'

/** What a terminal wait reads the run through: the engine's own `getRun` and `subscribe`. */
export interface RunSource {
  getRun(runId: string): Promise<RunState>
  subscribe(
    runId: string,
    listener: (events: readonly EventEnvelope[]) => void,
  ): Promise<() => void>
}

const ENDS_RUN: ReadonlySet<string> = new Set([RT.runCompleted, RT.runFailed, RT.runCancelled])

/**
 * Every wait of one engine, so `stop()` can end them (ENGINE_STOPPED) instead of leaving a
 * process held open by a result nobody will ever settle.
 */
export class TerminalWaits {
  private readonly pending = new Set<{ stop(error: Error): void; expire(): void }>()
  private stopped = false

  constructor(
    private readonly source: RunSource,
    private readonly clock: Clock,
  ) {}

  /**
   * The run's state once it is terminal, or, when `timeoutMs` passes first, its state then
   * (`timedOut`). Subscribes before it reads, so a run finishing in between is not missed: the
   * store's change feed (its own commits at once; other processes' through SQLite's
   * `data_version` or Postgres LISTEN) says when to look again, never a poll of the run.
   * While it waits the process stays alive. `signal` ends it early (a closed HTTP request).
   */
  async wait(
    runId: string,
    timeoutMs: number | undefined,
    signal?: AbortSignal,
  ): Promise<{ state: RunState; timedOut: boolean }> {
    checkTimeout(timeoutMs)
    if (this.stopped) throw stoppedError()
    let settle!: (outcome: { state: RunState; timedOut: boolean } | Error) => void
    const done = new Promise<{ state: RunState; timedOut: boolean }>((resolve, reject) => {
      settle = (outcome) => (outcome instanceof Error ? reject(outcome) : resolve(outcome))
    })
    let finished = false
    let looking: Promise<void> | undefined
    let lookAgain = false
    let timer: unknown
    let off: (() => void) | undefined
    const finish = (outcome: { state: RunState; timedOut: boolean } | Error) => {
      if (finished) return
      finished = true
      if (timer !== undefined) this.clock.clearTimeout(timer)
      off?.()
      this.pending.delete(onStop)
      signal?.removeEventListener('abort', onAbort)
      settle(outcome)
    }
    const expire = () => {
      if (finished) return
      this.source.getRun(runId).then(
        (state) => finish({ state, timedOut: !isTerminal(state.status) }),
        (error: unknown) => finish(error instanceof Error ? error : new Error(String(error))),
      )
    }
    const onStop = { stop: (error: Error) => finish(error), expire }
    const onAbort = () => finish(new InvalidRequestError('the wait was aborted by its caller'))
    const look = (): Promise<void> => {
      if (looking) {
        lookAgain = true
        return looking
      }
      looking = this.source.getRun(runId).then(
        (state) => {
          looking = undefined
          if (isTerminal(state.status)) finish({ state, timedOut: false })
          else if (lookAgain) {
            lookAgain = false
            void look()
          }
        },
        (error: unknown) => {
          looking = undefined
          finish(error instanceof Error ? error : new Error(String(error)))
        },
      )
      return looking
    }
    // A pending result keeps a script alive, like a pending fetch.
    holdProcessUntil(done)
    this.pending.add(onStop)
    signal?.addEventListener('abort', onAbort)
    if (signal?.aborted) onAbort()
    try {
      const unsubscribe = await this.source.subscribe(runId, (events) => {
        if (events.some((event) => ENDS_RUN.has(event.type))) void look()
      })
      if (finished) unsubscribe()
      else off = unsubscribe
    } catch (error) {
      finish(error instanceof Error ? error : new Error(String(error)))
    }
    if (!finished && timeoutMs !== undefined) {
      timer = this.clock.setTimeout(expire, timeoutMs)
    }
    if (!finished) void look()
    return done
  }

  /** `engine.result`: the output of a completed run; a failed or cancelled run rejects. */
  async result(runId: string, options: ResultOptions = {}): Promise<Json | undefined> {
    if (options === null || typeof options !== 'object') {
      throw new InvalidRequestError('result options must be an object')
    }
    const { state, timedOut } = await this.wait(runId, options.timeoutMs)
    if (timedOut) {
      throw new ResultTimeoutError(
        `run ${runId} did not finish within ${options.timeoutMs} ms (it is ${state.status}; it goes on)`,
        { runId, status: state.status, timeoutMs: options.timeoutMs ?? null },
      )
    }
    return outcomeOf(state)
  }

  /** Ends every pending wait with ENGINE_STOPPED; later waits are refused the same way. */
  stop(): void {
    this.stopped = true
    for (const wait of [...this.pending]) wait.stop(stoppedError())
  }

  /** Ends every pending wait now as if its timeout had passed (a server closing its requests). */
  expireAll(): void {
    for (const wait of [...this.pending]) wait.expire()
  }
}

/** The longest single wait: a clock's timer (Node's setTimeout) holds at most 2^31-1 ms. */
export const MAX_WAIT_MS = 2 ** 31 - 1

function checkTimeout(timeoutMs: unknown): void {
  if (timeoutMs === undefined) return
  if (
    !Number.isInteger(timeoutMs) ||
    (timeoutMs as number) < 0 ||
    (timeoutMs as number) > MAX_WAIT_MS
  ) {
    throw new InvalidRequestError(
      `timeoutMs must be an integer number of milliseconds from 0 to ${MAX_WAIT_MS}`,
      { timeoutMs: String(timeoutMs) },
    )
  }
}

const stoppedError = () =>
  new EngineStoppedError('the engine is stopped (stop() was called): the wait for the run ended')
