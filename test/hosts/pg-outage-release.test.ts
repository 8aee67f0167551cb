import { connect, createServer, type Server, type Socket } from 'node:net'
import { createEngine, defineEffect, defineInput, defineModule, type Engine } from 'skein'
import { postgresStore } from 'skein/postgres'
import { defineWorkflow, workflow } from 'skein/workflow'
import { afterEach, describe, expect, it } from 'vitest'
import { z } from 'zod'
import { waitFor } from '../support/children.js'
import { PG_URL, postgresAvailable, testSchemas } from '../support/postgres.js'

// A host whose store goes away while an attempt of its run is in flight must let the run go
// once the store is back: its lease renewals succeed again, so the lease stays held (and a
// peer's call waits) until the host records the finished attempt and releases. The outage is a
// TCP proxy this test starts and stops in front of the real server (never the server itself).

/** A TCP proxy to Postgres that can drop every connection and refuse new ones, then come back. */
async function pgProxy(target: URL) {
  const sockets = new Set<Socket>()
  let down = false
  const server: Server = createServer((client) => {
    if (down) return client.destroy()
    const upstream = connect(Number(target.port || 5432), target.hostname)
    for (const s of [client, upstream]) {
      sockets.add(s)
      s.on('error', () => {})
      s.on('close', () => {
        sockets.delete(s)
        client.destroy()
        upstream.destroy()
      })
    }
    client.pipe(upstream).pipe(client)
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  const { port } = server.address() as { port: number }
  const url = new URL(target.href)
  url.hostname = '127.0.0.1'
  url.port = String(port)
  return {
    url: url.href,
    down() {
      down = true
      for (const s of sockets) s.destroy()
    },
    up() {
      down = false
    },
    close() {
      for (const s of sockets) s.destroy()
      return new Promise<void>((r) => server.close(() => r()))
    },
  }
}

if (postgresAvailable('pg-outage-release')) {
  const schemas = testSchemas('outage_release')

  describe('outage, then release (Postgres through a proxy)', () => {
    // A try's engines and proxy end after it, so a retry starts clean.
    const engines: Engine[] = []
    const proxies: Array<{ close(): Promise<void> }> = []
    afterEach(async () => {
      for (const e of engines.splice(0)) await e.stop().catch(() => {})
      for (const p of proxies.splice(0)) await p.close().catch(() => {})
    })

    it("a host's lease held across an outage is let go once the store is back, so a peer's signal is served", async () => {
      const schema = schemas.next()
      const proxy = await pgProxy(new URL(PG_URL))
      proxies.push(proxy)
      let finish!: () => void
      const finished = new Promise<void>((r) => (finish = r))
      const mod = defineModule({
        namespace: 'or',
        events: { note: defineInput(z.object({ n: z.number() })) },
        effects: {
          slow: defineEffect<null, string>({ execute: () => finished.then(() => 'done') }),
        },
      })
      const flow = defineWorkflow({
        name: 'flow',
        nodes: {
          slow: { run: (ctx) => ctx.invoke('or.slow') },
          park: { after: ['slow'], run: (ctx) => ctx.waitFor('or.done') },
        },
      })
      const modules = () => [workflow({ definitions: [flow] }), mod]
      const failures: string[] = []
      // A: through the proxy; a long lease (it stays valid through the outage) renewed often.
      const a = createEngine({
        store: postgresStore({ connectionString: proxy.url }, { schema, maxConnections: 2 }),
        modules: modules(),
        ownership: { owner: 'host-a', leaseMs: 60_000, renewMs: 300 },
        observer: (o) => {
          if (o.type === 'wake.failed' && o.runId === 'r') failures.push(String(o.error))
        },
      })
      // B: straight to the server; it waits up to 5 s for A to let the run go.
      const b = createEngine({
        store: postgresStore({ connectionString: PG_URL }, { schema, maxConnections: 2 }),
        modules: modules(),
        ownership: { owner: 'host-b', waitMs: 5000 },
      })
      engines.push(a, b)
      await a.ready()
      await b.ready()
      await a.start(flow, undefined, { runId: 'r' })

      proxy.down()
      finish() // the attempt finishes while A cannot record it
      // A's recording retries back off (250 ms doubling): after six failures the next is 8 s away.
      // Six fit in about 8 s; the deadline only ends a wait that would otherwise hang.
      await waitFor(
        "host A's sixth failed recording during the outage",
        () => failures.length >= 6,
        {
          withinMs: 45_000,
          seen: () => `${failures.length} failure(s): ${failures.join(' | ') || 'none'}`,
        },
      )
      proxy.up()
      const restored = Date.now()

      const state = await b.signal('r', [{ type: 'or.note', payload: { n: 1 } }])
      process.stdout.write(
        `SCORE pg-outage-release recording_failures=${failures.length} signal_served_after_restore_ms=${Date.now() - restored} wait_ms=5000\n`,
      )
      expect(state.status).toBe('running')
      const events = await b.getEvents('r')
      expect(events.some((e) => e.type === 'runtime.effect.completed')).toBe(true)
      expect(events.filter((e) => e.type === 'or.note')).toHaveLength(1)
      await a.stop()
      await proxy.close()
    }, 120_000)
  })
}
