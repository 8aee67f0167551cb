import type { Clock, WakeScheduler } from '../core/ports.js'

/**
 * The default scheduler: one process-local timer per run for its earliest deadline, through
 * the injected Clock. It does not wake a stopped process: durable deadlines are found again by
 * `rescanTimers` on boot.
 */
export function localScheduler(): WakeScheduler {
  const timers = new Map<string, { at: number; handle: unknown }>()
  let clock: Clock | undefined
  let wake: ((runId: string, dueAt: number) => Promise<unknown>) | undefined
  let stopped = false

  const cancel = (runId: string) => {
    const current = timers.get(runId)
    if (current && clock) clock.clearTimeout(current.handle)
    timers.delete(runId)
  }

  return {
    start(wakeFn, clockIn) {
      wake = wakeFn
      clock = clockIn
      stopped = false
    },
    schedule(runId, at) {
      if (!clock || !wake || stopped) return
      const current = timers.get(runId)
      if (current && current.at === at) return
      cancel(runId)
      const delay = Math.max(0, at - clock.now())
      const handle = clock.setTimeout(() => {
        if (timers.get(runId)?.handle !== handle) return
        timers.delete(runId)
        return wake?.(runId, at)
      }, delay)
      timers.set(runId, { at, handle })
    },
    cancel,
    stop() {
      stopped = true
      for (const runId of [...timers.keys()]) cancel(runId)
    },
  }
}
