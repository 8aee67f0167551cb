import { describe } from 'vitest'
import { worldCases } from '../world-case.js'
import { agentCases } from './agents.js'
import { cancelCases } from './cancel.js'
import { effectCases } from './effects.js'
import { idempotencyCases } from './idempotency.js'
import { restartCases } from './restart.js'
import { snapshotCases } from './snapshots.js'
import { workerCases } from './workers.js'
import { workflowCases } from './workflows.js'
import { type MakeEngineStorage, openWorld } from './world.js'

export type { EngineStorage, MakeEngineStorage } from './world.js'

/**
 * The whole-engine contract (docs/testing.md, beyond the store port): real workflows, approvals,
 * timers on a manual clock, effects with retries, workers, agents, evaluators, cancellation,
 * idempotency, snapshots and trimming, and restarts onto a new engine, asserting outcomes and
 * event sequences. Call it at the top level of a vitest file. `makeStorage` is called once per
 * test and must give fresh, empty storage: a store (a restart then reuses that same object), or
 * `{ open, dispose? }` whose every `open()` opens a new store on the same data, as a restarted
 * process would. Stores the suite opened are closed after each test, then `dispose` runs.
 *
 * @example
 * describeEngine('memory', () => memoryStore())
 * describeEngine('sqlite', () => {
 *   const path = join(dir, `${randomUUID()}.db`)
 *   return { open: () => sqliteStore({ path }) }
 * })
 */
export function describeEngine(name: string, makeStorage: MakeEngineStorage): void {
  describe(`Engine contract: ${name}`, () => {
    const test = worldCases(() => openWorld(makeStorage))

    workflowCases(test)
    effectCases(test)
    workerCases(test)
    agentCases(test)
    cancelCases(test)
    idempotencyCases(test)
    snapshotCases(test)
    restartCases(test)
  })
}
