import type { Engine, RetentionStatus } from 'skein'
import type { ManualClock } from 'skein/testing'

/**
 * Waits until the engine's retention sweeps deleted `total` runs (or `done` says so), moving the
 * manual clock on by `stepMs` between looks. A claimed task schedules its next round when the
 * round ends; a round whose store I/O outlasted `clock.advance` schedules it on a manual clock
 * that fires only when moved again, so a wait that never moves the clock can wait forever.
 */
export async function untilSwept(
  engine: Engine,
  clock: ManualClock,
  done: number | ((status: RetentionStatus) => boolean),
  { stepMs = 1000, withinMs = 30_000 } = {},
): Promise<void> {
  const reached = typeof done === 'number' ? (s: RetentionStatus) => s.deletedTotal === done : done
  let status = await engine.retention()
  for (const end = Date.now() + withinMs; !reached(status); status = await engine.retention()) {
    if (Date.now() > end) {
      throw new Error(`the retention sweep never got there: ${JSON.stringify(status)}`)
    }
    await clock.advance(stepMs)
    await new Promise((r) => setTimeout(r, 10))
  }
}
