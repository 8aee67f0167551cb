import fc from 'fast-check'
import { createEngine, memoryStore } from 'skein'
import { decision, pendingApprovals } from 'skein/approval'
import { describe, expect, it } from 'vitest'
import { cloneFold, emptyFold, foldEvents, viewState } from '../../src/core/fold/index.js'
import { cloneJson } from '../../src/core/json.js'
import { definitions, gated, makeEngine } from '../support/fixtures.js'

/** A random script of signals against a gated workflow, recorded by the real engine. */
const script = fc.array(
  fc.oneof(
    fc.record({ kind: fc.constant('note' as const), n: fc.integer({ min: 0, max: 99 }) }),
    fc.record({ kind: fc.constant('decide' as const), approve: fc.boolean() }),
    fc.record({ kind: fc.constant('cancel' as const) }),
  ),
  { maxLength: 12 },
)

async function record(steps: fc.Arbitrary<unknown> extends never ? never : any[]) {
  const store = memoryStore()
  const { engine } = makeEngine({ store })
  const { runId } = await engine.start(gated, { orderId: 'o', amount: 3 })
  for (const step of steps) {
    if (step.kind === 'note')
      await engine.signal(runId, [{ type: 'app.note', payload: { n: step.n } }])
    if (step.kind === 'decide') {
      const [item] = (await engine.project(runId, pendingApprovals)).items
      const open = item.status === 'pending' && (await engine.getRun(runId)).status === 'running'
      const decided = engine.signal(runId, [
        decision(item.approvalId, step.approve ? 'approve' : 'reject'),
      ])
      // Only a pending approval of a live run takes a decision; any other is refused.
      if (open) await decided
      else expect((await decided.catch((e) => e)).code).toBe('INVALID_EVENT')
    }
    if (step.kind === 'cancel') await engine.cancel(runId)
  }
  const registry = (await engine.runtime).registry
  const events = await store.read(runId)
  const state = await engine.getRun(runId)
  await engine.stop()
  return { registry, events, runId, state }
}

describe('the fold (properties)', () => {
  it('is deterministic, matches the engine, and snapshot-at-k + fold(rest) equals the full fold; logs are gapless', async () => {
    await fc.assert(
      fc.asyncProperty(script, fc.nat(), async (steps, cut) => {
        const { registry, events, runId, state } = await record(steps)
        expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i + 1))
        const once = foldEvents(registry, runId, events)
        const twice = foldEvents(registry, runId, events)
        expect(cloneJson(once)).toEqual(cloneJson(twice))
        expect(viewState(once)).toEqual(state)
        const k = cut % (events.length + 1)
        const snapshot = cloneJson(foldEvents(registry, runId, events.slice(0, k)))
        const resumed = foldEvents(registry, runId, events.slice(k), snapshot)
        expect(cloneJson(resumed)).toEqual(cloneJson(once))
      }),
      { numRuns: 60 },
    )
  })

  it('a fold copy never changes when the original folds on (records are shared, not aliased)', async () => {
    await fc.assert(
      fc.asyncProperty(script, fc.nat(), async (steps, cut) => {
        const { registry, events, runId } = await record(steps)
        const k = cut % (events.length + 1)
        const original = foldEvents(registry, runId, events.slice(0, k))
        const before = cloneJson(original)
        const copy = cloneFold(original)
        // Settling, cancelling and closing commands on the original must not reach the copy.
        foldEvents(registry, runId, events.slice(k), original)
        expect(cloneJson(copy)).toEqual(before)
        const resumed = foldEvents(registry, runId, events.slice(k), copy)
        expect(cloneJson(resumed)).toEqual(cloneJson(original))
      }),
      { numRuns: 60 },
    )
  })

  it('an empty fold has no state to leak between runs', () => {
    expect(emptyFold('a').state.threads).not.toBe(emptyFold('b').state.threads)
    expect(definitions.length).toBeGreaterThan(0)
    expect(createEngine).toBeTypeOf('function')
  })
})

describe('viewState', () => {
  it('hands out threads as a plain object copy: own prototype, insertion order, detached', async () => {
    const { engine } = makeEngine()
    const { runId, state } = await engine.start(gated, { orderId: 'o1', amount: 5 })
    expect(Object.getPrototypeOf(state.threads)).toBe(Object.prototype)
    const ids = Object.keys(state.threads)
    expect(ids).toEqual([state.rootThreadId])
    expect(JSON.parse(JSON.stringify(state.threads))[state.rootThreadId].status).toBeDefined()
    ;(state.threads as Record<string, unknown>).extra = 1
    expect(Object.keys((await engine.getRun(runId)).threads)).toEqual(ids)
    await engine.stop()
  })
})
