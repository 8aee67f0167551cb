import type { Clock } from '../core/ports.js'

export interface ManualClock extends Clock {
  /** Moves time forward, firing due timers in time order and awaiting what they return. */
  advance(ms: number): Promise<void>
  /** Sets the time (never backwards) and fires what fell due. */
  set(epochMs: number): Promise<void>
  /** Timers not yet fired. */
  readonly pending: number
}

/**
 * A clock that moves only when told: tests treat time as data and never sleep. Pass it as
 * `createEngine({ clock })`; `await clock.advance(ms)` fires timers and waits for the wakes
 * they start.
 */
export function manualClock(start = 1_700_000_000_000): ManualClock {
  let now = start
  let seq = 0
  const timers = new Map<number, { at: number; order: number; callback: () => unknown }>()
  const fireDue = async (until: number) => {
    for (;;) {
      let next: { id: number; at: number; order: number } | undefined
      for (const [id, t] of timers) {
        if (t.at > until) continue
        if (!next || t.at < next.at || (t.at === next.at && t.order < next.order))
          next = { id, at: t.at, order: t.order }
      }
      if (!next) break
      const timer = timers.get(next.id)!
      timers.delete(next.id)
      now = Math.max(now, timer.at)
      await timer.callback()
    }
    now = Math.max(now, until)
  }
  return {
    now: () => now,
    setTimeout(callback, ms) {
      const id = ++seq
      timers.set(id, { at: now + Math.max(0, ms), order: id, callback })
      return id
    },
    clearTimeout(handle) {
      timers.delete(handle as number)
    },
    advance: (ms) => fireDue(now + ms),
    set: (epochMs) => fireDue(Math.max(now, epochMs)),
    get pending() {
      return timers.size
    },
  }
}
