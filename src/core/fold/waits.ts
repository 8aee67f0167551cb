import { withProps } from '../copy.js'
import { RT } from '../runtime-events.js'
import type { FoldCases, RunFold } from './run-fold.js'
import { commandOf, replaceCommand, setCommand } from './thread-book.js'
import { setThread, settleCommand } from './thread-records.js'
import type { WaitRecord } from './wait-record.js'

// The wait family: `runtime.wait.*` and the timers that time waits out (`runtime.timer.*`).
// A thread with an open wait is `waiting`; its last wait closing makes it `running` again.

export const waitCases: FoldCases = {
  [RT.waitRegistered]: (fold, event) => {
    const w = event.payload
    fold.waits[w.waitId] = withProps(w, { status: 'open' as const })
    const book = fold.books[w.threadId]
    if (!book) return
    setCommand(book, w.key, { kind: 'wait', id: w.waitId, status: 'pending' })
    book.openWaits++
    if (fold.state.threads[w.threadId]?.status === 'running') setThread(fold, w.threadId, 'waiting')
  },
  [RT.waitSatisfied]: (fold, event) => {
    const s = event.payload
    const wait = fold.waits[s.waitId]
    if (wait?.status !== 'open') return
    wait.status = s.timedOut ? 'timed_out' : 'satisfied'
    closeWait(fold, wait)
    settleCommand(
      fold,
      wait.threadId,
      wait.key,
      s.timedOut ? { status: 'timed_out' } : { status: 'completed', value: s.value },
    )
  },
  [RT.timerSet]: (fold, event) => {
    const p = event.payload
    fold.timers[p.timerId] = { timerId: p.timerId, waitId: p.waitId, at: p.at }
    const wait = fold.waits[p.waitId]
    if (wait) wait.timerId = p.timerId
  },
  [RT.timerFired]: (fold, event) => {
    delete fold.timers[event.payload.timerId]
  },
}

/** Removes a wait that ended (and its timer); the thread runs again when it was its last. */
export function closeWait(fold: RunFold, wait: WaitRecord): void {
  if (wait.timerId) delete fold.timers[wait.timerId]
  delete fold.waits[wait.waitId]
  const book = fold.books[wait.threadId]
  if (!book) return
  book.openWaits = Math.max(0, book.openWaits - 1)
  if (wait.status === 'cancelled' && commandOf(book, wait.key)?.status === 'pending') {
    replaceCommand(book, wait.key, { status: 'cancelled' })
  }
  if (book.openWaits === 0 && fold.state.threads[wait.threadId]?.status === 'waiting')
    setThread(fold, wait.threadId, 'running')
}

/** The open waits of a thread (a thread that ends cancels them). */
export function openWaitsOf(fold: RunFold, threadId: string): WaitRecord[] {
  const out: WaitRecord[] = []
  for (const waitId in fold.waits) {
    const wait = fold.waits[waitId]
    if (wait.threadId === threadId && wait.status === 'open') out.push(wait)
  }
  return out
}
