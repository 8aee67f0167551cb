// A commit that took effect but reported an error (a lost reply, a connection dropped after
// COMMIT) left a run stuck with ownership on: its writer dropped the fold but kept renewing
// the lease, so no process (itself included) ever claimed the run again and the attempt
// recorded as started never ran again (seen in test/hosts/pg-hosts-outage.test.ts).
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createEngine, defineEffect, defineModule } from 'skein'
import { sqliteStore } from 'skein/sqlite'
import { faultyStore } from 'skein/testing'
import { defineWorkflow, workflow } from 'skein/workflow'
import { afterAll, describe, expect, it } from 'vitest'

const dir = mkdtempSync(join(tmpdir(), 'skein-failed-commit-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

describe('ownership after a failed commit', () => {
  it('a run whose start commit reported an error is claimed again and completes', async () => {
    const inner = sqliteStore({ path: join(dir, 'runs.db') })
    const store = faultyStore(inner)
    let calls = 0
    const fx = defineModule({
      namespace: 'fx',
      effects: {
        work: defineEffect<{ n: number }, { n: number }>({
          execute: async (input) => {
            // The first attempt's outcome commit takes effect, but the engine sees it fail.
            calls++
            return { n: input.n }
          },
        }),
      },
    })
    const flow = defineWorkflow({
      name: 'flow',
      nodes: { a: { run: (ctx) => ctx.invoke('fx.work', { n: 1 }) } },
    })
    const engine = createEngine({
      store,
      modules: [workflow({ definitions: [flow] }), fx],
      ownership: { leaseMs: 600, renewMs: 200, pollMs: 50 },
    })
    try {
      await engine.ready()
      // The start's commit (the run, its node and the attempt recorded as started) takes
      // effect, but the engine sees it fail, so it never runs the attempt.
      store.failNext('append', 'after')
      const refused = await engine.start(flow, {}, { runId: 'r1' }).catch((error) => error)
      expect(refused).toBeInstanceOf(Error)
      const id = 'r1'
      let status = ''
      for (let i = 0; i < 300 && status !== 'completed'; i++) {
        status = (await engine.inspectRun(id)).status
        if (status !== 'completed') await new Promise((r) => setTimeout(r, 50))
      }
      expect(status).toBe('completed')
      expect(store.injected.length).toBe(1)
      expect(calls).toBe(1)
    } finally {
      await engine.stop()
      await inner.close()
    }
  }, 30_000)

  it('an outcome whose commit failed is not left pending: the run is recovered and completes', async () => {
    const inner = sqliteStore({ path: join(dir, 'outcome.db') })
    const store = faultyStore(inner)
    let calls = 0
    const fx = defineModule({
      namespace: 'fx',
      effects: {
        work: defineEffect<{ n: number }, { n: number }>({
          execute: async (input) => {
            calls++
            // Settles after the pass that started it; the wake recording it then fails once.
            await new Promise((r) => setTimeout(r, 100))
            if (calls === 1) store.failNext('append', 'before')
            return { n: input.n }
          },
        }),
      },
    })
    const flow = defineWorkflow({
      name: 'flow',
      nodes: { a: { run: (ctx) => ctx.invoke('fx.work', { n: 1 }) } },
    })
    const engine = createEngine({
      store,
      modules: [workflow({ definitions: [flow] }), fx],
      ownership: { leaseMs: 600, renewMs: 200, pollMs: 50 },
    })
    try {
      await engine.start(flow, {}, { runId: 'r2' })
      let status = ''
      for (let i = 0; i < 200 && status !== 'completed'; i++) {
        status = (await engine.inspectRun('r2')).status
        if (status !== 'completed') await new Promise((r) => setTimeout(r, 50))
      }
      expect(status).toBe('completed')
      expect(store.injected.length).toBe(1)
      // The outcome's commit never happened: the attempt ran again as interrupted (at least once).
      expect(calls).toBe(2)
    } finally {
      await engine.stop()
      await inner.close()
    }
  }, 30_000)
})
