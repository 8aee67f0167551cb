import type { DefinitionList } from '../core/definition.js'
import { createEngine } from '../create-engine.js'
import type { EngineOptions } from '../engine-options.js'
import type { Engine } from '../runtime/engine-types.js'
import { type ManualClock, manualClock } from './manual-clock.js'
import { type FakeExecute, type FakeTarget, replaceEffects } from './replace-effects.js'

/** A clock whose `advance` returns once the work the time it moved released has settled. */
export interface SettlingClock extends ManualClock {
  /** Moves time, fires what falls due, and waits until nothing is queued or in flight. */
  advance(ms: number): Promise<void>
  set(epochMs: number): Promise<void>
}

/** `Defs`: the definitions as a type, typing `engine.signal` as `createEngine<Defs>` does. */
export interface TestEngine<Defs extends DefinitionList = DefinitionList> {
  engine: Engine<Defs>
  clock: SettlingClock
  /** Waits until no run has work queued or in flight, and nothing is due at the clock's now. */
  settle(): Promise<void>
}

export interface TestEngineOptions extends Omit<EngineOptions, 'clock'> {
  /** Effects to run with a fake implementation, by effect object or type (`replaceEffects`). */
  fakes?: ReadonlyArray<readonly [FakeTarget, FakeExecute]>
  /** The clock's start time (epoch ms). */
  now?: number
}

/**
 * An engine for an app's own tests (docs/testing.md, "Testing your workflows"): in memory
 * unless given a store, on a manual clock whose `advance` settles, with `fakes` standing in for
 * effects. Stop it with `engine.stop()`.
 */
export function createTestEngine<Defs extends DefinitionList = DefinitionList>(
  options: TestEngineOptions = {},
): TestEngine<Defs> {
  const { fakes, now, modules = [], ...rest } = options
  const base = manualClock(now)
  const engine = createEngine<Defs>({
    ...rest,
    clock: base,
    modules: fakes ? replaceEffects(modules, fakes) : [...modules],
  })
  const settle = async () => {
    const { runtime } = await engine.ready()
    // Attempts that finish fire timers (retries, deadlines) due now: until nothing moves.
    for (let round = 0; round < 1_000; round++) {
      await runtime.idle()
      const pending = base.pending
      await base.advance(0)
      await runtime.idle()
      if (base.pending === pending) return
    }
  }
  const clock: SettlingClock = {
    now: () => base.now(),
    setTimeout: base.setTimeout,
    clearTimeout: base.clearTimeout,
    get pending() {
      return base.pending
    },
    async advance(ms: number) {
      await settle()
      await base.advance(ms)
      await settle()
    },
    async set(epochMs: number) {
      await settle()
      await base.set(epochMs)
      await settle()
    },
  }
  return { engine, clock, settle }
}
