import { afterEach, describe, expect, it } from 'vitest'
import type { AuthorizeContext, AuthorizeHook } from '../../src/http/authorize.js'
import type { Engine } from '../../src/runtime/engine-types.js'
import { memoryStore } from '../../src/stores/memory/memory-store.js'
import { faultyStore, type StoreCall } from '../../src/testing/fault-store.js'
import { json } from './helpers.js'
import { realEngine } from './real-engine.js'

// The auth matrix, the hook's identity, failing closed and bearerAuth's levels are cases of the
// host contract (src/testing/http-contract/auth.ts). Here, what only the embed engine shows: the
// hook runs before any store access, and it guards the debugger.

const engines: Engine[] = []
afterEach(async () => {
  await Promise.all(engines.splice(0).map((e) => e.stop()))
})

describe('authorize hook (embed)', () => {
  it('runs before body parsing and store access, with route, access and runId', async () => {
    const calls: StoreCall[] = []
    const store = faultyStore(memoryStore(), (call) => void calls.push(call))
    const seen: AuthorizeContext[] = []
    const hook: AuthorizeHook = (_req, ctx) => {
      seen.push(ctx)
      return new Response('no', { status: 418 })
    }
    const { engine } = realEngine({ store, authorize: hook })
    engines.push(engine)
    await engine.ready()
    calls.length = 0
    const bad = new Request('http://x/runs/r9/events', {
      method: 'POST',
      body: '{not json',
      headers: { 'content-type': 'text/plain' },
    })
    const res = (await engine.fetch(bad))!
    expect(res.status).toBe(418)
    // A read that would go to the store is denied before it does.
    expect((await engine.fetch(json('GET', '/runs/r9/events')))!.status).toBe(418)
    expect(seen).toEqual([
      { route: 'runs.signal', access: 'write', runId: 'r9' },
      { route: 'runs.events', access: 'read', runId: 'r9' },
    ])
    expect(calls).toEqual([])
    // Allowed, the same read does reach the store: the check above can see a store call.
    const open = realEngine({ store, authorize: () => true }).engine
    engines.push(open)
    await open.ready()
    calls.length = 0
    expect((await open.fetch(json('GET', '/runs/r9/events')))!.status).toBe(404)
    expect(calls.length).toBeGreaterThan(0)
  })

  it('authorizes the debugger as read/debugger and hands it the request', async () => {
    const seen: AuthorizeContext[] = []
    const { engine } = realEngine({
      authorize: (_r, ctx) => {
        seen.push(ctx)
        return true
      },
      debugger: {
        basePath: '/_skein',
        ui: {
          fetch: (req, { basePath }) => new Response(`${basePath} ${new URL(req.url).pathname}`),
        },
      },
    })
    engines.push(engine)
    const res = (await engine.fetch(json('GET', '/_skein/app.js')))!
    expect(await res.text()).toBe('/_skein /_skein/app.js')
    expect(seen).toEqual([{ route: 'debugger', access: 'read', name: 'debugger' }])
    expect(await engine.fetch(json('GET', '/_skeinx'))).toBeNull()
  })
})
