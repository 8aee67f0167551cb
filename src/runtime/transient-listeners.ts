import { withProps } from '../core/copy.js'
import type { TransientEvent } from '../core/envelope.js'

type Listener = (event: TransientEvent) => void

/** In-process subscribers of transient events (streamed text), by run; never stored. */
export class TransientListeners {
  private readonly byRun = new Map<string, Set<Listener>>()

  subscribe(runId: string, listener: Listener): () => void {
    let set = this.byRun.get(runId)
    if (!set) {
      set = new Set()
      this.byRun.set(runId, set)
    }
    set.add(listener)
    return () => {
      set.delete(listener)
      if (set.size === 0 && this.byRun.get(runId) === set) this.byRun.delete(runId)
    }
  }

  /** Delivers `event` to the run's listeners, placed after `afterSeq` (its run's committed tail). */
  publish(event: Omit<TransientEvent, 'afterSeq'>, afterSeq: () => number): void {
    const set = this.byRun.get(event.runId)
    if (!set) return
    const full: TransientEvent = withProps(event, { afterSeq: afterSeq() })
    for (const listener of [...set]) {
      try {
        listener(full)
      } catch {
        // A subscriber never affects the effect that published.
      }
    }
  }
}
