import { EngineStoppedError, LeaseLostError, RunNotFoundError } from '../core/errors.js'
import type { Clock, EventStore } from '../core/ports.js'
import type { Engine } from '../runtime/engine-types.js'
import type { Logger } from '../runtime/logger.js'
import { type CellScheduler, cellScheduler } from './cell-scheduler.js'
import type { CellStorage, CellStore } from './cell-store.js'
import type { RunRegistry } from './run-registry.js'

/** An open cell: the one writer of its run (an engine over the run's own storage). */
export interface Cell {
  readonly runId: string
  readonly engine: Engine
  readonly storage: CellStorage
  readonly scheduler: CellScheduler
  /** Requests, streams and subscriptions using the cell now: it is never closed under them. */
  refs: number
  lastUsed: number
}

export interface CellTableOptions {
  cells: CellStore
  registry: RunRegistry
  makeEngine(store: EventStore, scheduler: CellScheduler): Engine
  clock: Clock
  maxOpenCells: number
  idleTimeoutMs: number
  /** A cell whose deadline is this close stays open, and a closed one is opened this early. */
  aheadMs: number
  /** How long a closing cell's in-flight attempts may finish before they are aborted. */
  closeGraceMs: number
  /**
   * Whether the registry keeps the cells' wake times (false for cells over a shared store:
   * their deadlines wait in the store's run index and are claimed from there).
   */
  wakes: boolean
  log: Logger
}

/** A cell being opened, and how long that open waits for another process (undefined: the default). */
type Opening = Promise<Cell> & { waitMs?: number }

/** Whether a wait of `mine` is longer than one of `theirs` (undefined: the cell store's default). */
const waitsLonger = (mine: number | undefined, theirs: number | undefined) =>
  theirs !== undefined && (mine === undefined || mine > theirs)

/**
 * The open cells of a host: at most one per run (so one writer per run in this process; the
 * cell store's lock gives it across processes), opened lazily, closed when idle, bounded by
 * `maxOpenCells` (least recently used first). A cell in use is never closed, so the bound is
 * soft while more than `maxOpenCells` runs are in use at once.
 */
export class CellTable {
  /** Open cells, least recently used first (a use moves a cell to the end). */
  private readonly open = new Map<string, Cell>()
  private readonly opening = new Map<string, Opening>()
  private readonly closing = new Map<string, Promise<void>>()
  private stopped = false

  constructor(private readonly o: CellTableOptions) {}

  get size(): number {
    return this.open.size
  }

  /** Open, opening or closing: a due-cell sweep leaves it alone (closing writes its wake). */
  isOpen(runId: string): boolean {
    return this.open.has(runId) || this.opening.has(runId) || this.closing.has(runId)
  }

  /** The cell of `runId`, opened if needed, held until `release`. */
  async acquire(runId: string, create: boolean, waitMs?: number): Promise<Cell> {
    for (;;) {
      if (this.stopped) throw new EngineStoppedError('the actor host is stopping')
      const cell = this.open.get(runId)
      if (cell) {
        cell.refs++
        this.open.delete(runId)
        this.open.set(runId, cell)
        return cell
      }
      const closing = this.closing.get(runId)
      if (closing) {
        await closing
        continue
      }
      let opening = this.opening.get(runId)
      const joined = opening !== undefined
      if (!opening) {
        opening = this.openCell(runId, create, waitMs)
        this.opening.set(runId, opening)
        opening.waitMs = waitMs
        const settled = () => {
          this.opening.delete(runId)
        }
        opening.then(settled, settled)
      }
      try {
        await opening
      } catch (error) {
        // A read's open found no run while a start was on its way: the start's turn now.
        if (create && RunNotFoundError.is(error)) continue
        // Another process holds the cell, and the open this call joined waited less than this
        // call may (boot recovery and the sweep do not wait): it waits its own time now.
        if (joined && LeaseLostError.is(error) && waitsLonger(waitMs, opening.waitMs)) continue
        throw error
      }
    }
  }

  /** The cell of `runId` if it is open now (no waiting), held until `release`. */
  tryAcquire(runId: string): Cell | undefined {
    const cell = this.open.get(runId)
    if (cell) cell.refs++
    return cell
  }

  release(cell: Cell): void {
    cell.refs--
    cell.lastUsed = this.o.clock.now()
  }

  /** Runs `fn` on the run's cell, holding it meanwhile. */
  async use<T>(runId: string, create: boolean, fn: (cell: Cell) => Promise<T>): Promise<T> {
    const cell = await this.acquire(runId, create)
    try {
      return await fn(cell)
    } finally {
      this.release(cell)
    }
  }

  /** Whether `cell` has a deadline within `aheadMs` (it stays open for it). */
  private dueSoon(cell: Cell, now: number): boolean {
    const next = cell.scheduler.next()
    return next !== undefined && next - now <= this.o.aheadMs
  }

  private async openCell(runId: string, create: boolean, waitMs?: number): Promise<Cell> {
    const storage = await this.o.cells.open(
      runId,
      create,
      waitMs === undefined ? undefined : { waitMs },
    )
    const scheduler = cellScheduler()
    let engine: Engine
    try {
      engine = this.o.makeEngine(storage.store, scheduler)
      // Boot: the run's deadlines are scheduled (due ones at once), interrupted attempts resumed.
      await engine.ready()
      // While open, the registry says "open me": a crash leaves it due for the next boot.
      if (this.o.wakes) await this.o.registry.setWake(runId, this.o.clock.now())
    } catch (error) {
      await storage.close().catch(() => {})
      throw error
    }
    const cell: Cell = { runId, engine, storage, scheduler, refs: 0, lastUsed: this.o.clock.now() }
    this.open.set(runId, cell)
    this.evictOverflow(runId)
    return cell
  }

  /** Closes least recently used idle cells while more than `maxOpenCells` are open. */
  private evictOverflow(keep: string): void {
    if (this.open.size <= this.o.maxOpenCells) return
    const now = this.o.clock.now()
    let excess = this.open.size - this.o.maxOpenCells
    // First cells with no deadline close by, then any idle one: a cell evicted before its
    // deadline only writes that deadline down and is opened again for it.
    for (const pass of [0, 1]) {
      for (const cell of this.open.values()) {
        if (excess <= 0) return
        if (cell.runId === keep || cell.refs > 0) continue
        if (pass === 0 && this.dueSoon(cell, now)) continue
        this.close(cell)
        excess--
      }
    }
  }

  /** Whether a due cell can be opened now without pushing out another due one. */
  hasRoom(): boolean {
    if (this.open.size + this.opening.size < this.o.maxOpenCells) return true
    const now = this.o.clock.now()
    for (const cell of this.open.values()) {
      if (cell.refs === 0 && !this.dueSoon(cell, now)) return true
    }
    return false
  }

  /** Closes cells idle for `idleTimeoutMs` (not those with a deadline close by). */
  closeIdle(): void {
    const now = this.o.clock.now()
    for (const cell of [...this.open.values()]) {
      if (cell.refs > 0 || now - cell.lastUsed < this.o.idleTimeoutMs) continue
      if (this.dueSoon(cell, now)) continue
      this.close(cell)
    }
  }

  private close(cell: Cell, graceMs = this.o.closeGraceMs): Promise<void> {
    this.open.delete(cell.runId)
    const closing = (async () => {
      // Each step runs whatever the one before did: a cell whose engine failed to stop still
      // lets its file (and lock) go and writes its wake, or it could never be opened again.
      const failed = (step: string) => (error: unknown) =>
        this.o.log.error(
          { runId: cell.runId, err: String(error) },
          `actor host: closing a cell: ${step} failed`,
        )
      await cell.engine.stop({ graceMs }).catch(failed('engine stop'))
      // After stop: what in-flight work scheduled on its way out counts too.
      const next = cell.scheduler.next()
      await cell.storage.close().catch(failed('storage close'))
      if (this.o.wakes) {
        await this.o.registry.setWake(cell.runId, next ?? null).catch(failed('registry wake'))
      }
    })()
    this.closing.set(cell.runId, closing)
    closing.finally(() => this.closing.delete(cell.runId))
    return closing
  }

  /** Closes every cell (host stop): their deadlines go to the registry. */
  async closeAll(graceMs?: number): Promise<void> {
    this.stopped = true
    await Promise.allSettled([...this.opening.values()])
    await Promise.all([...this.open.values()].map((cell) => this.close(cell, graceMs)))
    await Promise.all([...this.closing.values()])
  }

  /** Closes and forgets the cell of a run whose start wrote nothing. */
  async discard(runId: string): Promise<void> {
    const cell = this.open.get(runId)
    if (cell && cell.refs === 0) await this.close(cell)
    else await this.closing.get(runId)
    if (!this.open.has(runId)) await this.o.cells.discard(runId)
    await this.o.registry.forget(runId)
  }
}
