import type { WaitOn } from '../runtime-events.js'

/** An open wait (waits.ts folds `runtime.wait.*` and `runtime.timer.*` into it). */
export interface WaitRecord {
  waitId: string
  threadId: string
  key: string
  on: WaitOn
  status: 'open' | 'satisfied' | 'timed_out' | 'cancelled'
  timerId?: string
}

/** An open timer: the timeout of the wait `waitId`, due at `at`. */
export interface TimerRecord {
  timerId: string
  waitId: string
  at: number
}
