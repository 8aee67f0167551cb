import { expect } from 'vitest'
import { ROUTES } from '../../http/routes/index.js'
import type { Sent } from './host-world.js'

/**
 * Where a host departs from the embed handler, declared in one place (docs/testing.md: "Differences from
 * the embed handler are stated per route"). Every other case of the suite holds as it does for
 * the embed handler.
 */
export interface HttpHostDifferences {
  /**
   * Route names (`queues.list`, `schedules.list`, …) the host answers `501 NOT_SUPPORTED` once
   * the request is authorized: an actor host has no store-wide queues or schedules.
   */
  notSupported?: readonly string[]
}

/** The declared differences, checked against the route table (a typo fails loudly). */
export function checkedDifferences(differences: HttpHostDifferences = {}): HttpHostDifferences {
  const names = new Set(ROUTES.map((route) => route.name))
  for (const name of differences.notSupported ?? []) {
    if (!names.has(name)) throw new Error(`http host contract: no route named ${name}`)
  }
  return differences
}

/** Whether the host declared it does not support `route`. */
export const unsupported = (differences: HttpHostDifferences, route: string): boolean =>
  differences.notSupported?.includes(route) ?? false

/** The answer to an authorized request of a route the host declared unsupported. */
export function expectNotSupported(res: Sent): void {
  expect(res.status, res.text).toBe(501)
  expect(res.body.error.code).toBe('NOT_SUPPORTED')
}
