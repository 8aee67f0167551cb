import type { WaitFor } from '../core/api-types.js'
import type { RunState, StartResult } from '../core/envelope.js'
import { EngineStoppedError, RunNotFoundError } from '../core/errors.js'
import { RT } from '../core/runtime-events.js'
import type { EngineContext } from './context.js'

/** How often a `wait: 'settled'` start that is queued looks at its run besides listening. */
const ADMISSION_POLL_MS = 1000
/** How often a start joined to another run looks for that run's log while it is written. */
const JOIN_POLL_MS = 5

/** What the waits of a flow-controlled start need of the engine (engine.ts). */
export interface StartWaitHost {
  getRun(runId: string): Promise<RunState>
  /** One wake pass of the run, resolved once it settles (`wait: 'settled'`). */
  settle(runId: string): Promise<RunState>
  /** Whether the engine is stopping: a queued run is then left to a restart. */
  stopping(): boolean
}

/**
 * A start that flow control gave another run (singleton `skip`, a debounce window;
 * docs/flow-control.md): that run's state, once its log exists (its start may still be
 * writing it, in this process or another).
 */
export async function joinedStart(
  ctx: EngineContext,
  host: StartWaitHost,
  runId: string,
  wait: WaitFor,
): Promise<StartResult> {
  const { clock, store } = ctx
  const until = clock.now() + (ctx.ownership?.leaseMs ?? 30_000)
  for (;;) {
    let wake: () => void = () => {}
    const heard = new Promise<void>((resolve) => {
      wake = resolve
    })
    const stop = store.subscribe?.(runId, () => wake())
    const timer = clock.setTimeout(wake, JOIN_POLL_MS)
    try {
      const state =
        wait === 'settled' ? await settleAfterAdmission(ctx, host, runId) : await host.getRun(runId)
      return { runId, threadId: state.rootThreadId, state }
    } catch (error) {
      if (!(error instanceof RunNotFoundError) || clock.now() > until) throw error
      await heard
    } finally {
      stop?.()
      clock.clearTimeout(timer)
    }
  }
}

/**
 * `wait: 'settled'` on a queued start (docs/flow-control.md): waits until the run is admitted
 * (or cancelled), here or in another process, then until it settles as any start does.
 */
export async function settleAfterAdmission(
  ctx: EngineContext,
  host: StartWaitHost,
  runId: string,
): Promise<RunState> {
  const { clock, store } = ctx
  for (;;) {
    let wake: () => void = () => {}
    const heard = new Promise<void>((resolve) => {
      wake = resolve
    })
    const stop = store.subscribe?.(runId, (events) => {
      if (events.some((e) => e.type === RT.runAdmitted || e.type === RT.runCancelled)) wake()
    })
    const timer = clock.setTimeout(wake, ADMISSION_POLL_MS)
    try {
      const now = await host.getRun(runId)
      if (now.status !== 'queued') break
      await heard
    } finally {
      stop?.()
      clock.clearTimeout(timer)
    }
    if (host.stopping()) {
      throw new EngineStoppedError(
        `the engine stopped before run ${runId} was admitted; it stays queued and is admitted after a restart`,
        { runId },
      )
    }
  }
  return host.settle(runId)
}
