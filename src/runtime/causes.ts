import { AsyncLocalStorage } from 'node:async_hooks'

/**
 * What caused the operations made inside `run`: an opaque id (the HTTP layer's request id) that
 * a run's queue records with each operation it is handed, so the observations of the wake
 * passes that follow (and of the attempts those passes launch) name the request that caused
 * them. An observer that traces (skein/otel) parents its spans by it.
 *
 * Made only for an observer that asks (`traceCauses: true`, as skein/otel's does): on Node 20
 * an AsyncLocalStorage in use turns on promise hooks, a cost on every promise in the process.
 */
export class Causes {
  private readonly storage = new AsyncLocalStorage<string>()

  /** The cause of the current call, if a caller gave one. */
  current(): string | undefined {
    return this.storage.getStore()
  }

  /** Calls `fn` with `cause` as the cause of every operation it makes. */
  run<T>(cause: string, fn: () => T): T {
    return this.storage.run(cause, fn)
  }

  /** The engine stopped: with no other AsyncLocalStorage left, Node turns its hooks off. */
  close(): void {
    this.storage.disable()
  }
}
