import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createEngine, defineEffect, defineModule, type Observation } from 'skein'
import { approval, decision, pendingApprovals } from 'skein/approval'
import { sqliteStore } from 'skein/sqlite'
import { type FaultWhen, faultyStore, isInjectedFault, manualClock } from 'skein/testing'
import { defineWorkflow, workflow } from 'skein/workflow'
import { afterAll, describe, expect, it } from 'vitest'
import { freshPath } from '../support/temp-dirs.js'
import { checkCompletion, checkLogs } from './log-checks.js'

const dir = mkdtempSync(join(tmpdir(), 'skein-faults-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

const fx = defineModule({
  namespace: 'fx',
  effects: {
    work: defineEffect<{ step: string }, { step: string }>({
      retry: { maxAttempts: 3, backoffMs: 100 },
      execute: async (input) => ({ step: input.step }),
    }),
  },
})
const flow = defineWorkflow({
  name: 'flow',
  nodes: {
    a: { run: (ctx) => ctx.invoke('fx.work', { step: 'a' }) },
    gate: { after: ['a'], run: (ctx) => ctx.gate({ title: 'go?', approvalId: 'g1' }) },
    nap: { after: ['gate'], run: (ctx) => ctx.sleep(1000) },
    b: { after: ['nap'], run: (ctx) => ctx.invoke('fx.work', { step: 'b' }) },
  },
})
const modules = () => [workflow({ definitions: [flow] }), approval(), fx]
const NODES = { flow: ['a', 'gate', 'nap', 'b'] }

let files = 0

/**
 * Start → approve → timer → effect on a SQLite file, with the store call number `faultAt`
 * failing `when` it takes effect. Every operation that rejects is retried with the same ids and
 * keys (as a client would); after the fault, `wake` moves the run on.
 */
async function scenario(faultAt: number, when: FaultWhen) {
  const inner = sqliteStore({ path: join(dir, `f${++files}.db`) })
  const store = faultyStore(inner, (call) => (call.index === faultAt ? when : null))
  const clock = manualClock()
  const surfaced: unknown[] = []
  // A boot that fails is final for that engine instance (ready() stays rejected), so the
  // host does what a supervisor would: it reports the error and builds a new engine.
  const observed: string[] = []
  const observer = (o: Observation) => {
    if (o.error) observed.push(typeof o.error === 'string' ? o.error : JSON.stringify(o.error))
  }
  let engine = createEngine({ store, modules: modules(), clock, observer })
  try {
    await engine.ready()
  } catch (error) {
    surfaced.push(error)
    await engine.stop()
    engine = createEngine({ store, modules: modules(), clock, observer })
  }
  const retry = async <T>(op: () => Promise<T>): Promise<T | undefined> => {
    for (let i = 0; i < 3; i++) {
      try {
        return await op()
      } catch (error) {
        surfaced.push(error)
      }
    }
    return undefined
  }
  const idle = async () => (await engine.runtime).idle()
  await retry(() =>
    engine.startRun({
      kind: 'workflow',
      definitionName: 'flow',
      runId: 'r',
      idempotencyKey: 'start',
    }),
  )
  await idle()
  // A person approves what they see pending (a decision sent before its gate is requested
  // matches nothing: waits match events appended after them). A wake moves a run on whose
  // background commit failed.
  for (let i = 0; i < 5; i++) {
    const pending = await engine.project('r', pendingApprovals).catch((e) => {
      surfaced.push(e)
      return { items: [] }
    })
    if (pending.items.some((item) => item.approvalId === 'g1')) break
    await retry(() => engine.wake('r'))
    await idle()
    await clock.advance(100)
    await idle()
  }
  await retry(() => engine.signal('r', [decision('g1', 'approve')], { idempotencyKey: 'decide' }))
  await idle()
  await clock.advance(1000)
  await idle()
  // The fault has cleared; a wake (and due timers) finish what it interrupted.
  for (let i = 0; i < 5; i++) {
    const state = await engine.getRun('r').catch((e) => void surfaced.push(e))
    if (state?.status === 'completed') break
    await retry(() => engine.wake('r'))
    await idle()
    await clock.advance(1000)
    await idle()
  }
  const state = await engine.getRun('r')
  await engine.stop()
  const report = await checkLogs(inner, modules())
  const done = checkCompletion(report.logs, NODES)
  // A fresh engine on the file agrees with the one that saw the fault.
  const again = createEngine({ store: inner, modules: modules(), clock: manualClock() })
  const reread = await again.getRun('r')
  await again.stop()
  await inner.close()
  return {
    observed,
    state,
    reread,
    report,
    done,
    surfaced,
    injected: store.injected,
    calls: store.injected.length,
  }
}

describe('fault injection around the SQLite store', () => {
  it('without faults the scenario completes (and counts its store calls)', async () => {
    const result = await scenario(0, 'before')
    expect(result.state.status).toBe('completed')
    expect(result.done.problems).toEqual([])
  })

  it('every store call failing before or after it takes effect: an error surfaces, the log stays sound, the run completes', async () => {
    // Count the calls of a clean run, then fail each one in turn.
    let calls = 0
    {
      const inner = sqliteStore({ path: freshPath(dir, 'count.db') })
      const counting = faultyStore(inner, (call) => {
        calls = call.index
        return null
      })
      const clock = manualClock()
      const engine = createEngine({ store: counting, modules: modules(), clock })
      await engine.startRun({ kind: 'workflow', definitionName: 'flow', runId: 'r' })
      await (await engine.runtime).idle()
      await engine.signal('r', [decision('g1', 'approve')])
      await (await engine.runtime).idle()
      await clock.advance(1000)
      await (await engine.runtime).idle()
      expect((await engine.getRun('r')).status).toBe('completed')
      await engine.stop()
      await inner.close()
    }
    expect(calls).toBeGreaterThan(10)
    let cases = 0
    let surfaced = 0
    let silent = 0
    let observedOnly = 0
    const unobserved: string[] = []
    const failures: string[] = []
    for (let k = 1; k <= calls; k++) {
      for (const when of ['before', 'after'] as const) {
        const r = await scenario(k, when)
        if (r.injected.length === 0) continue
        cases++
        const label = `call ${k} (${r.injected[0].method}) failing ${when}`
        if (r.surfaced.some(isInjectedFault)) surfaced++
        else if (r.observed.some((m) => m.includes('injected fault'))) observedOnly++
        else {
          silent++
          unobserved.push(label)
        }
        const foreign = r.surfaced.filter((e) => !isInjectedFault(e))
        if (foreign.length) failures.push(`${label}: unexpected ${String(foreign[0])}`)
        if (r.report.problems.length) failures.push(`${label}: ${r.report.problems[0]}`)
        if (r.done.problems.length) failures.push(`${label}: ${r.done.problems[0]}`)
        if (r.state.status !== 'completed') failures.push(`${label}: run ${r.state.status}`)
        if (r.reread.lastSeq !== r.state.lastSeq)
          failures.push(`${label}: a fresh engine reads another state`)
      }
    }
    console.log(
      `SCORE fault_injection cases=${cases} surfaced=${surfaced} observed=${observedOnly} unreported=${silent} failures=${failures.length}`,
    )
    if (unobserved.length) console.log(`faults no caller or observer saw: ${unobserved.join('; ')}`)
    expect(failures).toEqual([])
  }, 120_000)
})
