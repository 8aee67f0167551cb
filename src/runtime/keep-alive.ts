import type { Engine } from './engine-types.js'

/** Calls a user awaits now: while any is pending, one ref'd handle holds the event loop open. */
let pending = 0
let handle: ReturnType<typeof setInterval> | undefined

/**
 * Keeps the process alive until `promise` settles, as a pending fetch does. Engine timers are
 * unref'd so an idle engine never holds a process open, but a call a user awaits (a signal
 * waiting for another process to let the run's lease go, a `wait: 'settled'` start, a result)
 * must not let Node exit under it ("unsettled top-level await", code 13): the call settles or
 * fails with its own clear error (LEASE_LOST after `ownership.waitMs`, RESULT_TIMEOUT, …).
 * One handle for the whole process, ref'd while any call is pending and unref'd after.
 */
export function holdProcessUntil<T>(promise: Promise<T>): Promise<T> {
  if (pending++ === 0) {
    handle ??= setInterval(() => {}, 1 << 30)
    handle.ref?.()
  }
  const settled = () => {
    if (--pending === 0) handle?.unref?.()
  }
  promise.then(settled, settled)
  return promise
}

/** The engine calls a user awaits that may wait on other processes, timers or effects. */
const USER_CALLS = [
  'start',
  'startRun',
  'getRun',
  'getEvents',
  'signal',
  'wake',
  'cancel',
  'listRuns',
  'retryMany',
  'wakeMany',
  'cancelMany',
  'migrateRun',
  'migrateRuns',
  'listRunSummaries',
  'listDefinitions',
  'versions',
  'project',
  'replayTo',
  'inspectRun',
  'listEffects',
  'listThreads',
  'retryEffect',
  'requeueEffect',
  'failEffect',
  'fork',
  'workerCallback',
  'completeWaitUrl',
  'rescanTimers',
  'recoverDeadlines',
  'projectors',
  'stop',
] as const satisfies ReadonlyArray<keyof Engine>

/** Makes each of the engine's user calls hold the process open until it settles. */
export function holdProcessDuringCalls(engine: Engine): void {
  const calls = engine as unknown as Record<string, (...args: unknown[]) => Promise<unknown>>
  for (const name of USER_CALLS) {
    const call = calls[name] as (...args: unknown[]) => Promise<unknown>
    calls[name] = (...args) => holdProcessUntil(call(...args))
  }
}
