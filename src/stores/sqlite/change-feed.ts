import type { EventEnvelope } from '../../core/envelope.js'
import type { EventListener } from '../../core/ports.js'
import { rowToEnvelope } from '../shared/event-rows.js'
import { runListeners } from '../shared/run-listeners.js'
import type { Statements } from './statements.js'

/**
 * `subscribe` for a file other processes write too (docs/storage.md, "Several processes on one file"): this connection's own commits
 * are delivered at once (`notify`), and while anyone listens a timer reads `PRAGMA
 * data_version` every `pollMs` (it moves only when another connection committed) and then
 * reads the listened runs' new events. Each run's delivered seq is kept, so a batch is
 * delivered once and in order whichever way it arrived.
 */
export function changeFeed(
  st: Statements,
  pollMs: number,
  onListenerError: (error: unknown, runId: string) => void,
) {
  const listeners = runListeners(onListenerError)
  /** Per listened run: the last seq delivered, and how many listen. */
  const runs = new Map<string, { delivered: number; count: number }>()
  let timer: ReturnType<typeof setInterval> | undefined
  let dataVersion = -1

  const deliver = (runId: string, events: readonly EventEnvelope[]) => {
    const run = runs.get(runId)
    if (!run || events.length === 0) return
    let fresh = events[0].seq > run.delivered ? events : events.filter((e) => e.seq > run.delivered)
    if (fresh.length === 0) return
    // Another process appended in between and the timer has not seen it yet: those first.
    if (fresh[0].seq > run.delivered + 1) {
      const gap = st.read
        .all(runId, run.delivered + 1, fresh[0].seq - run.delivered - 1)
        .map((row) => rowToEnvelope(runId, row))
      fresh = [...gap, ...fresh]
    }
    run.delivered = fresh[fresh.length - 1].seq
    listeners.notify(runId, fresh)
  }

  const poll = () => {
    try {
      const version = st.dataVersion.get() as number
      if (version === dataVersion) return
      for (const [runId, run] of runs) {
        const tail = st.run.get(runId)?.tail ?? 0
        if (tail <= run.delivered) continue
        const rows = st.readAll.all(runId, run.delivered + 1)
        deliver(
          runId,
          rows.map((row) => rowToEnvelope(runId, row)),
        )
      }
      // Only once every listened run is read: a read that failed is tried again next tick.
      dataVersion = version
    } catch {
      // A busy or closing file: the next tick tries again.
    }
  }

  return {
    /** Called after this connection committed a batch. */
    notify: deliver,
    subscribe(runId: string, listener: EventListener): () => void {
      let run = runs.get(runId)
      if (!run) {
        run = { delivered: st.run.get(runId)?.tail ?? 0, count: 0 }
        runs.set(runId, run)
      }
      run.count++
      if (timer === undefined && pollMs > 0) {
        dataVersion = st.dataVersion.get() as number
        timer = setInterval(poll, pollMs)
        timer.unref?.()
      }
      const unsubscribe = listeners.subscribe(runId, listener)
      let done = false
      return () => {
        if (done) return
        done = true
        unsubscribe()
        const current = runs.get(runId)
        if (current && --current.count === 0) runs.delete(runId)
        if (runs.size === 0 && timer !== undefined) {
          clearInterval(timer)
          timer = undefined
        }
      }
    },
    clear(): void {
      if (timer !== undefined) clearInterval(timer)
      timer = undefined
      runs.clear()
      listeners.clear()
    },
  }
}
