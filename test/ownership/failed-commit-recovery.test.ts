// A commit that took effect but reported an error (a lost reply, a connection dropped after
// COMMIT), or a wake that failed to record finished work, must not leave a run stuck with
// ownership on: the run is claimed again and recovered from the log (seen in
// test/hosts/pg-hosts-outage.test.ts before the fix).
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createEngine, defineEffect, defineModule, type Engine } from 'skein'
import { sqliteStore } from 'skein/sqlite'
import { type FaultyStore, faultyStore } from 'skein/testing'
import { defineWorkflow, workflow } from 'skein/workflow'
import { afterAll, describe, expect, it } from 'vitest'

const dir = mkdtempSync(join(tmpdir(), 'skein-failed-commit-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

const flow = defineWorkflow({
  name: 'flow',
  nodes: { a: { run: (ctx) => ctx.invoke('fx.work', { n: 1 }) } },
})

/**
 * An engine with ownership on a SQLite file behind a fault store, whose one effect calls
 * `execute(store, call)` (call numbers from 1) and returns its input; `scenario` drives it.
 */
async function withOwnedEngine(
  file: string,
  execute: (store: FaultyStore, call: number) => Promise<void>,
  scenario: (engine: Engine, store: FaultyStore, calls: () => number) => Promise<void>,
): Promise<void> {
  const inner = sqliteStore({ path: join(dir, file) })
  const store = faultyStore(inner)
  let calls = 0
  const fx = defineModule({
    namespace: 'fx',
    effects: {
      work: defineEffect<{ n: number }, { n: number }>({
        execute: async (input) => {
          await execute(store, ++calls)
          return { n: input.n }
        },
      }),
    },
  })
  const engine = createEngine({
    store,
    modules: [workflow({ definitions: [flow] }), fx],
    ownership: { leaseMs: 600, renewMs: 200, pollMs: 50 },
  })
  try {
    await scenario(engine, store, () => calls)
  } finally {
    await engine.stop()
    await inner.close()
  }
}

async function statusWhenSettled(engine: Engine, runId: string): Promise<string> {
  let status = ''
  for (let i = 0; i < 300 && status !== 'completed'; i++) {
    status = (await engine.inspectRun(runId)).status
    if (status !== 'completed') await new Promise((r) => setTimeout(r, 50))
  }
  return status
}

describe('ownership after a failed commit', () => {
  it('a run whose start commit reported an error is claimed again and completes', async () => {
    await withOwnedEngine(
      'runs.db',
      async () => {},
      async (engine, store, calls) => {
        await engine.ready()
        // The start's commit (the run, its node and the attempt recorded as started) takes
        // effect, but the engine sees it fail, so it never runs the attempt.
        store.failNext('append', 'after')
        const refused = await engine.start(flow, {}, { runId: 'r1' }).catch((error) => error)
        expect(refused).toBeInstanceOf(Error)
        expect(await statusWhenSettled(engine, 'r1')).toBe('completed')
        expect(store.injected.length).toBe(1)
        expect(calls()).toBe(1)
      },
    )
  }, 30_000)

  it('an outcome whose commit failed is not left pending: the run is recovered and completes', async () => {
    await withOwnedEngine(
      'outcome.db',
      async (store, call) => {
        // Settles after the pass that started it; the wake recording it then fails once.
        await new Promise((r) => setTimeout(r, 100))
        if (call === 1) store.failNext('append', 'before')
      },
      async (engine, store, calls) => {
        await engine.start(flow, {}, { runId: 'r2' })
        expect(await statusWhenSettled(engine, 'r2')).toBe('completed')
        expect(store.injected.length).toBe(1)
        // The outcome's commit never happened: the attempt ran again as interrupted.
        expect(calls()).toBe(2)
      },
    )
  }, 30_000)
})
