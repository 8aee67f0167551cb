import {
  createEngine,
  type Engine,
  type EngineOptions,
  type EventEnvelope,
  type EventStore,
} from '../../index.js'
import { type ManualClock, manualClock } from '../manual-clock.js'
import {
  newControl,
  type RecordingWorker,
  recordingWorker,
  type SuiteControl,
  suiteModules,
} from './definitions.js'
import { eventually } from './eventually.js'

/**
 * Where the engines of one test keep their runs. Each `open()` opens a store on the same data,
 * as a restarted process (or a second one) would; a memory store's storage hands back the same
 * store each time.
 */
export interface EngineStorage {
  open(): EventStore | Promise<EventStore>
  /** Called after the test, once its engines stopped and the stores it opened closed. */
  dispose?(): unknown
}

/** A fresh, empty store (reopened as the same object), or a storage to open stores on. */
export type MakeEngineStorage = () =>
  | EventStore
  | EngineStorage
  | Promise<EventStore | EngineStorage>

/** Engine options a test adds to the suite's (modules, store and clock are the world's). */
export type WorldEngineOptions = Omit<EngineOptions, 'modules' | 'store' | 'clock'>

/**
 * One test's world: a manual clock, the effects' controls, a recording worker, and engines on
 * one storage. `engine` is the current process's engine.
 */
export interface EngineWorld {
  readonly clock: ManualClock
  readonly control: SuiteControl
  readonly worker: RecordingWorker
  /** The engine `boot` or `restart` made last. */
  readonly engine: Engine
  /** The store that engine runs on. */
  readonly store: EventStore
  /** Boots the first engine on a store opened on the storage. */
  boot(options?: WorldEngineOptions): Promise<Engine>
  /** Stops the current engine and boots a new one on a newly opened store (a restart). */
  restart(options?: WorldEngineOptions): Promise<Engine>
  /** Another engine on the same storage, beside the current one (a second process). */
  another(options?: WorldEngineOptions): Promise<Engine>
  /** Resolves when the current engine has nothing queued, running or in flight. */
  idle(): Promise<void>
  /** The types of a run's events (from `fromSeq`), read through the current engine. */
  types(runId: string, fromSeq?: number): Promise<string[]>
  /** Waits (without a clock) until the run's log has an event matching `test`. */
  until(runId: string, test: (event: EventEnvelope) => boolean): Promise<void>
}

export interface WorldHandle {
  world: EngineWorld
  /** Stops every engine, closes every store opened, disposes the storage. */
  close(): Promise<void>
}

const isStore = (value: EventStore | EngineStorage): value is EventStore =>
  typeof (value as EventStore).append === 'function'

export async function openWorld(make: MakeEngineStorage): Promise<WorldHandle> {
  const made = await make()
  const storage: EngineStorage = isStore(made) ? { open: () => made } : made
  const clock = manualClock()
  const control = newControl()
  const worker = recordingWorker()
  const engines: Engine[] = []
  const stores: EventStore[] = []
  let current: { engine: Engine; store: EventStore } | undefined

  const launch = async (options: WorldEngineOptions = {}) => {
    const store = await storage.open()
    if (!stores.includes(store)) stores.push(store)
    const engine = createEngine({ ...options, modules: suiteModules(control), store, clock })
    engines.push(engine)
    await engine.ready()
    return { engine, store }
  }
  const now = () => {
    if (!current) throw new Error('engine contract: call world.boot() first')
    return current
  }

  const world: EngineWorld = {
    clock,
    control,
    worker,
    get engine() {
      return now().engine
    },
    get store() {
      return now().store
    },
    async boot(options) {
      if (current) throw new Error('engine contract: the world has booted already')
      current = await launch(options)
      return current.engine
    },
    async restart(options) {
      await now().engine.stop()
      current = await launch(options)
      return current.engine
    },
    async another(options) {
      now()
      return (await launch(options)).engine
    },
    async idle() {
      await (await now().engine.runtime).idle()
    },
    async types(runId, fromSeq = 1) {
      return (await now().engine.getEvents(runId, { fromSeq })).map((e) => e.type)
    },
    until: (runId, test) =>
      eventually(
        async () => (await now().store.read(runId)).some(test),
        `run ${runId} to log the awaited event`,
      ),
  }

  return {
    world,
    async close() {
      for (const engine of engines.splice(0)) await engine.stop()
      for (const store of stores.splice(0).reverse()) await store.close?.()
      await storage.dispose?.()
    },
  }
}
