import { createEngine, defineEffect, defineModule, type EventStore } from 'skein'
import { manualClock } from 'skein/testing'
import { defineWorkflow, workflow } from 'skein/workflow'
import { describe, expect, it } from 'vitest'
import { storeKinds } from '../support/store-kinds.js'

const kinds = storeKinds('restart')

/** Resolves once the run's log records an attempt as started (the effect is in flight). */
async function attemptStarted(store: EventStore, runId: string): Promise<void> {
  for (;;) {
    const events = await store.read(runId)
    if (events.some((e) => e.type === 'runtime.effect.attempt.started')) return
    await new Promise((r) => setTimeout(r, 2))
  }
}

const nap = defineWorkflow({
  name: 'nap',
  nodes: { s: { run: (ctx) => ctx.sleep(10_000) }, done: { after: ['s'], run: () => 'woke' } },
})

describe.each(kinds)('restart recovery ($name store)', ({ fresh }) => {
  it('on boot, timers that fell due while down fire at once (rescanTimers)', async () => {
    const storage = fresh()
    const store = storage.open()
    const clock = manualClock()
    const first = createEngine({ modules: [workflow({ definitions: [nap] })], store, clock })
    const { runId } = await first.start(nap)
    await first.stop()
    await clock.advance(60_000) // the process is down; nothing fires
    expect((await store.read(runId)).at(-1)?.type).not.toBe('runtime.run.completed')
    const second = createEngine({
      modules: [workflow({ definitions: [nap] })],
      store: storage.open(),
      clock,
    })
    await second.ready()
    await clock.advance(0)
    await (await second.runtime).idle()
    expect((await second.getRun(runId)).status).toBe('completed')
    await second.stop()
  })

  it('an attempt started but not recorded when the process died is re-attempted as n+1, and the log says so', async () => {
    const storage = fresh()
    const store = storage.open()
    const clock = manualClock()
    let calls = 0
    const mod = (hang: boolean) =>
      defineModule({
        namespace: 'svc',
        effects: {
          call: defineEffect({
            retry: { maxAttempts: 3 },
            execute: () => {
              calls++
              return hang ? new Promise(() => {}) : { ok: true }
            },
          }),
        },
      })
    const wf = defineWorkflow({ name: 'w', nodes: { a: { run: (ctx) => ctx.invoke('svc.call') } } })
    const first = createEngine({
      modules: [workflow({ definitions: [wf] }), mod(true)],
      store,
      clock,
    })
    void first.start(wf, undefined, { runId: 'crash' })
    await attemptStarted(store, 'crash')
    await first.stop() // "dies" with attempt 1 in flight
    const second = createEngine({
      modules: [workflow({ definitions: [wf] }), mod(false)],
      store: storage.open(),
      clock,
    })
    await second.ready()
    await clock.advance(0)
    await (await second.runtime).idle()
    const state = await second.getRun('crash')
    expect(state.status).toBe('completed')
    expect(calls).toBe(2)
    const events = await second.getEvents('crash')
    const failed = events.find((e) => e.type === 'runtime.effect.failed')!
    expect(failed.payload).toMatchObject({ attempt: 1, reason: 'interrupted', final: false })
    const starts = events.filter((e) => e.type === 'runtime.effect.attempt.started')
    expect(starts.map((e) => (e.payload as any).attempt)).toEqual([1, 2])
    await second.stop()
  })

  it('recoverDeadlines rebuilds deadlines by folding every run', async () => {
    const storage = fresh()
    const store = storage.open()
    const clock = manualClock()
    const a = createEngine({ modules: [workflow({ definitions: [nap] })], store, clock })
    await a.start(nap)
    await a.start(nap)
    await a.stop()
    const b = createEngine({
      modules: [workflow({ definitions: [nap] })],
      store: storage.open(),
      clock,
      rescanTimers: false,
    })
    expect(await b.recoverDeadlines()).toBe(2)
    await clock.advance(10_000)
    await (await b.runtime).idle()
    const { runs } = await b.listRunSummaries()
    expect(runs.map((r) => r.status)).toEqual(['completed', 'completed'])
    await b.stop()
  })
})
