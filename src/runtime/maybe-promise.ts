// The wake pass stays synchronous unless user code makes it wait: a schema that validates
// asynchronously, an inline handler that returns a promise. Two loops carry that duality (the
// decide rounds, decide-rounds.ts, and this file's `eachInOrder`); every other step is either
// plainly synchronous or plainly async. A promise per step would cost ~10% of the engine's time
// (docs/performance.md; decisions.md, "Decide rounds … do not allocate promises").

/** What may be a value or a promise of one. */
export type MaybePromise<T> = T | Promise<T>

/** `next(value)`, at once when `value` is not a promise. */
export const andThen = <T, R>(
  value: MaybePromise<T>,
  next: (value: T) => MaybePromise<R>,
): MaybePromise<R> => (value instanceof Promise ? value.then(next) : next(value))

/** One item's work (module-level functions: no closure per call). */
export type Step<S, T, X = undefined> = (state: S, item: T, extra: X) => MaybePromise<void>

/**
 * Runs `step(state, item, extra)` over `items` in order: synchronously until a step returns a
 * promise, then the rest chained after it.
 */
export function eachInOrder<S, T, X>(
  state: S,
  items: readonly T[],
  step: Step<S, T, X>,
  extra: X,
  from = 0,
): MaybePromise<void> {
  for (let i = from; i < items.length; i++) {
    const pending = step(state, items[i], extra)
    if (pending instanceof Promise) {
      return pending.then(() => eachInOrder(state, items, step, extra, i + 1))
    }
  }
}
