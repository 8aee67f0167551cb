import type { AuthorizeHook, Clock, Module, ScheduleDefinition } from '../../index.js'
import { defineSchedule } from '../../index.js'
import { newControl, release, suiteModules } from '../engine-contract/definitions.js'
import { type ManualClock, manualClock } from '../manual-clock.js'
import type { WorldCase } from '../world-case.js'

/** What the suite hands a host factory: the modules to serve, the auth hook, the clock. */
export interface HttpHostSetup {
  modules: Module[]
  authorize?: AuthorizeHook
  clock: Clock
  /** One schedule (`nightly`), for the schedule routes; a host without schedules ignores it. */
  schedules: ScheduleDefinition[]
  /** The opt-in cancel routes are on, so the suite covers them (docs/operating-runs.md). */
  http: { cancelRoutes: true }
}

const nightly = defineSchedule({
  name: 'nightly',
  cron: '0 3 * * *',
  start: { definition: release, input: { topic: 'nightly' } },
})

/** A running server of a host, on 127.0.0.1. */
export interface HttpHostServer {
  url: string
  close?(): Promise<void>
}

/**
 * A host of the HTTP contract (docs/http.md): the embed engine, an actor host,
 * or yours. `fetch` answers a Web Request (`null` outside the API); with `serve`, every case
 * runs a second time over a real server on 127.0.0.1.
 */
export interface HttpHost {
  fetch(request: Request): Promise<Response | null>
  serve?(options: { port: number; hostname: string }): Promise<HttpHostServer>
  stop(): Promise<void>
}

export type MakeHttpHost = (setup: HttpHostSetup) => HttpHost | Promise<HttpHost>

export type Transport = 'in-process' | 'over 127.0.0.1'

const IN_PROCESS_BASE = 'http://skein.test'

export interface Sent {
  status: number
  headers: Headers
  /** The parsed JSON body (undefined for an empty or non-JSON one). */
  body: any
  text: string
}

/** One test's host, reached through the transport under test. */
export interface HostWorld {
  readonly clock: ManualClock
  readonly transport: Transport
  /** Makes the host (once per test). */
  boot(options?: { authorize?: AuthorizeHook }): Promise<void>
  /** Sends a request for `path` (and query) to the host; `null` only in-process, outside the API. */
  request(path: string, init?: RequestInit): Promise<Response | null>
  /** Sends a request and reads its body (JSON when it parses). */
  call(method: string, path: string, body?: unknown, headers?: HeadersInit): Promise<Sent>
}

/** Registers one host contract test: its body gets a fresh host world, closed after it. */
export type HostCase = WorldCase<HostWorld>

export interface HostWorldHandle {
  world: HostWorld
  close(): Promise<void>
}

export function openHostWorld(make: MakeHttpHost, transport: Transport): HostWorldHandle {
  const clock = manualClock()
  let host: HttpHost | undefined
  let server: HttpHostServer | undefined
  let base = IN_PROCESS_BASE

  const world: HostWorld = {
    clock,
    transport,
    async boot(options = {}) {
      if (host) throw new Error('http host contract: the world has booted already')
      const setup: HttpHostSetup = {
        modules: suiteModules(newControl()),
        clock,
        schedules: [nightly],
        http: { cancelRoutes: true },
      }
      if (options.authorize) setup.authorize = options.authorize
      host = await make(setup)
      if (transport === 'over 127.0.0.1') {
        if (!host.serve) throw new Error('http host contract: this host cannot serve')
        server = await host.serve({ port: 0, hostname: '127.0.0.1' })
        base = server.url.replace(/\/$/, '')
      }
    },
    async request(path, init = {}) {
      if (!host) throw new Error('http host contract: call world.boot() first')
      const request = new Request(base + path, init)
      return transport === 'in-process' ? host.fetch(request) : fetch(request)
    },
    async call(method, path, body, headers = {}) {
      const init: RequestInit = { method, headers }
      if (body !== undefined) {
        init.body = JSON.stringify(body)
        init.headers = { 'content-type': 'application/json', ...headers }
      }
      const res = await world.request(path, init)
      if (!res) throw new Error(`http host contract: ${method} ${path} was not answered`)
      return read(res)
    },
  }

  return {
    world,
    async close() {
      await server?.close?.()
      await host?.stop()
    },
  }
}

/** Status, headers and body of a response, the body parsed as JSON when it is JSON. */
export async function read(res: Response): Promise<Sent> {
  const text = await res.text()
  let body: unknown
  try {
    body = text === '' ? undefined : JSON.parse(text)
  } catch {
    body = undefined
  }
  return { status: res.status, headers: res.headers, body, text }
}
