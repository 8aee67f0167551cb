import type { RunFold } from '../core/fold.js'
import type { EngineContext } from './context.js'
import { type ControllerHost, RunController } from './run-controller.js'
import type { FoldCache } from './run-writer.js'

/**
 * The runs this process is serving: one controller per active run, made on first use and
 * dropped once the run is idle, and the LRU of folds kept between calls (`runCacheSize`). A
 * process-local map: it says which controller (and so which writer) serves a run here, never
 * who owns the run (across processes that is the store's business, issue 19).
 */
export class LocalRuns {
  private readonly controllers = new Map<string, RunController>()
  private readonly folds = new Map<string, RunFold>()
  readonly host: ControllerHost

  constructor(private readonly ctx: EngineContext) {
    const cache: FoldCache = {
      get: (runId) => this.cachedFold(runId),
      set: (runId, fold) => this.cacheFold(runId, fold),
      delete: (runId) => this.folds.delete(runId),
    }
    this.host = {
      ctx,
      stopping: false,
      stopped: false,
      cache,
      released: (c) => {
        if (this.controllers.get(c.runId) === c) this.controllers.delete(c.runId)
      },
    }
  }

  /** The run's controller, made if the run is not active. */
  controller(runId: string): RunController {
    let controller = this.controllers.get(runId)
    if (!controller) {
      controller = new RunController(this.host, runId)
      this.controllers.set(runId, controller)
    }
    return controller
  }

  /** The run's controller if it is active. */
  active(runId: string): RunController | undefined {
    return this.controllers.get(runId)
  }

  /** Every active run's controller. */
  all(): RunController[] {
    return [...this.controllers.values()]
  }

  /** A cached fold, without touching its place in the LRU (reads only peek). */
  peek(runId: string): RunFold | undefined {
    return this.folds.get(runId)
  }

  private cachedFold(runId: string): RunFold | undefined {
    const fold = this.folds.get(runId)
    if (fold) {
      this.folds.delete(runId)
      this.folds.set(runId, fold)
    }
    return fold
  }

  private cacheFold(runId: string, fold: RunFold): void {
    const size = this.ctx.options.runCacheSize
    if (size <= 0) return
    this.folds.delete(runId)
    this.folds.set(runId, fold)
    while (this.folds.size > size) this.folds.delete(this.folds.keys().next().value as string)
  }
}
