import { randomUUID } from 'node:crypto'
import { expect } from 'vitest'
import type { Json } from '../../src/core/json.js'
import type { EventStore } from '../../src/core/ports.js'
import { createHttpHandler } from '../../src/http/handler.js'
import type { HandlerOptions } from '../../src/http/route-types.js'
import type { SseTimers } from '../../src/http/sse-limits.js'
import type { Engine } from '../../src/runtime/engine-types.js'
import { idsOf, sseReader } from '../../src/testing/http-contract/sse-reader.js'

export { idsOf, sseReader }

export const BASE = 'http://skein.test'
export const MIB = 1024 * 1024

export function makeHandler(engine: Engine, options: Partial<HandlerOptions> = {}) {
  return createHttpHandler(engine, { maxRequestBytes: MIB, maxEventBytes: MIB, ...options })
}

export const json = (
  method: string,
  path: string,
  body?: unknown,
  headers: Record<string, string> = {},
) =>
  new Request(BASE + path, {
    method,
    headers: body === undefined ? headers : { 'content-type': 'application/json', ...headers },
    body: body === undefined ? undefined : JSON.stringify(body),
  })

/**
 * SSE timers driven by the test: `tick()` fires every registered interval (keepalives) once;
 * `expire()` fires every pending timeout (drain deadlines), as if their time had come.
 */
export function manualTimers(): SseTimers & {
  tick(): void
  expire(): void
  readonly active: number
  readonly pending: number
} {
  const intervals = new Map<number, () => void>()
  const timeouts = new Map<number, () => void>()
  let next = 1
  return {
    setInterval(callback) {
      intervals.set(next, callback)
      return next++
    },
    clearInterval(handle) {
      intervals.delete(handle as number)
    },
    setTimeout(callback) {
      timeouts.set(next, callback)
      return next++
    },
    clearTimeout(handle) {
      timeouts.delete(handle as number)
    },
    tick() {
      for (const callback of [...intervals.values()]) callback()
    },
    expire() {
      const due = [...timeouts.values()]
      timeouts.clear()
      for (const callback of due) callback()
    },
    get active() {
      return intervals.size
    },
    get pending() {
      return timeouts.size
    },
  }
}

/**
 * The catch-up/live seam check: run r1 has 7 events, the stream (opened by `open`, paged by 2)
 * sees an append between each of `rounds` pages and after them, and must deliver every seq
 * exactly once, in order.
 */
export async function expectSeamlessStream(
  store: EventStore,
  open: () => Promise<Response>,
  rounds: number,
): Promise<void> {
  await appendRaw(
    store,
    'r1',
    Array.from({ length: 7 }, (_, i) => `pre.${i}`),
  )
  const reader = sseReader(await open())
  for (let i = 0; i < rounds; i++) {
    await reader.until((t) => idsOf(t).length >= 2 * i + 1)
    await appendRaw(store, 'r1', [`during.${i}`])
  }
  const total = await store.tail('r1')
  await reader.until((t) => idsOf(t).includes(total))
  expect(idsOf(reader.text)).toEqual(Array.from({ length: total }, (_, i) => i + 1))
  await reader.cancel()
}

/**
 * Appends events to a run directly on the store, as another process's writer would: the
 * engine here learns of them only through the store (its subscription), like any live reader.
 */
export async function appendRaw(
  store: EventStore,
  runId: string,
  types: string[],
  payload: Json = null,
) {
  const tail = await store.tail(runId)
  const events = types.map((type, i) => ({
    id: randomUUID(),
    runId,
    seq: tail + i + 1,
    ts: 0,
    type,
    payload,
    threadId: null,
    origin: 'external' as const,
  }))
  await store.append(runId, events, { expectedSeq: tail })
  return events
}

/** A store whose live subscriptions are counted: `active` is how many are open now. */
export function countingStore<S extends EventStore>(
  inner: S,
): S & { subscriptions: { active: number } } {
  const subscriptions = { active: 0 }
  const subscribe: EventStore['subscribe'] = (runId, listener) => {
    const off = inner.subscribe!(runId, listener)
    subscriptions.active++
    let done = false
    return () => {
      if (!done) subscriptions.active--
      done = true
      off()
    }
  }
  return new Proxy(inner, {
    get(target, prop) {
      if (prop === 'subscriptions') return subscriptions
      if (prop === 'subscribe') return subscribe
      const value = Reflect.get(target, prop)
      return typeof value === 'function' ? value.bind(target) : value
    },
  }) as S & { subscriptions: { active: number } }
}
