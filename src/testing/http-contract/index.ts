import { describe } from 'vitest'
import { worldCases } from '../world-case.js'
import { authCases } from './auth.js'
import { checkedDifferences, type HttpHostDifferences } from './differences.js'
import { type MakeHttpHost, openHostWorld, type Transport } from './host-world.js'
import { requestCases } from './requests.js'
import { routeCases } from './routes.js'
import { sseCases } from './sse.js'

export type { HttpHostDifferences } from './differences.js'
export type {
  HttpHost,
  HttpHostServer,
  HttpHostSetup,
  MakeHttpHost,
  Transport,
} from './host-world.js'

export interface HttpHostContractOptions {
  /** Where the host departs from the embed handler (see `HttpHostDifferences`). */
  differences?: HttpHostDifferences
  /**
   * How requests reach the host: `in-process` calls `host.fetch`; `over 127.0.0.1` calls
   * `host.serve({ port: 0 })` and sends real HTTP requests. Default: both.
   */
  transports?: readonly Transport[]
}

/**
 * The HTTP contract every host runs (docs/http.md), the way one router suite
 * runs against every router: every route's codes and shapes, errors, idempotency, the auth
 * matrix from the route table, query-parameter refusal, body limits, SSE resume and the end
 * frame, the streaming start. `makeHost` gets the modules to serve, the `authorize` hook and a
 * manual clock, and returns a fresh host; the suite stops it after each test.
 *
 * @example
 * describeHttpHost('embed', (setup) => createEngine(setup))
 */
export function describeHttpHost(
  name: string,
  makeHost: MakeHttpHost,
  options: HttpHostContractOptions = {},
): void {
  const differences = checkedDifferences(options.differences)
  for (const transport of options.transports ?? ['in-process', 'over 127.0.0.1']) {
    describe(`HTTP host contract: ${name} (${transport})`, () => {
      const test = worldCases(async () => openHostWorld(makeHost, transport))

      routeCases(test, differences)
      sseCases(test)
      authCases(test, differences)
      requestCases(test)
    })
  }
}
