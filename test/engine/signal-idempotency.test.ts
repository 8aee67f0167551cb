import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createEngine, type Engine, type EventInput } from 'skein'
import { approval, decision, pendingApprovals } from 'skein/approval'
import { sqliteStore } from 'skein/sqlite'
import { manualClock } from 'skein/testing'
import { workflow } from 'skein/workflow'
import { afterAll, afterEach, describe, expect, it } from 'vitest'
import { gated } from '../support/fixtures.js'

// The same key with the same events (canonical JSON) is a no-op returning the
// state; with other events it is IDEMPOTENCY_CONFLICT and nothing is written. This holds after
// snapshots, trims and restarts (the key and a digest live in the log and the fold), and under
// concurrency.

const dir = mkdtempSync(join(tmpdir(), 'skein-signal-keys-'))
let files = 0
afterAll(() => rmSync(dir, { recursive: true, force: true }))

const engines: Engine[] = []
afterEach(async () => {
  for (const engine of engines.splice(0)) await engine.stop()
})

function open(path: string, options: Parameters<typeof createEngine>[0] = {}) {
  const engine = createEngine({
    modules: [workflow({ definitions: [gated] }), approval()],
    store: sqliteStore({ path }),
    clock: manualClock(),
    ...options,
  })
  engines.push(engine)
  return engine
}

const tailOf = async (engine: Engine, runId: string) => (await engine.getRun(runId)).lastSeq
const code = (promise: Promise<unknown>) =>
  promise.then(
    () => 'ok',
    (e) => e.code as string,
  )

describe('signal idempotency keys', () => {
  it('retry is a no-op, another body is a conflict: before and after snapshots, trims and a restart', async () => {
    const path = join(dir, `keys-${++files}.db`)
    const trimming = { snapshotEvery: 2, trimAfterSnapshot: { keepSnapshots: 1 } }
    const first = open(path, trimming)
    const { runId } = await first.start(gated, { orderId: 'o1', amount: 5 })
    const note = { type: 'app.note', payload: { text: 'hello', n: 1 } }
    const noteReordered = { type: 'app.note', payload: { n: 1, text: 'hello' } }
    const other = { type: 'app.note', payload: { text: 'bye', n: 1 } }
    await first.signal(runId, [note, note], { idempotencyKey: 'k1' })
    const tail = await tailOf(first, runId)

    const check = async (engine: Engine) => {
      const retry = await engine.signal(runId, [noteReordered, note], { idempotencyKey: 'k1' })
      expect(retry.lastSeq).toBe(tail)
      const conflicts = [
        [other, note],
        [note],
        [note, note, note],
        [{ ...note, threadId: retry.rootThreadId }, note],
        [decision('x', 'approve'), note],
      ] as EventInput[][]
      for (const events of conflicts) {
        const error = await engine.signal(runId, events, { idempotencyKey: 'k1' }).catch((e) => e)
        expect(error.code, JSON.stringify(events)).toBe('IDEMPOTENCY_CONFLICT')
        expect(error.details).toMatchObject({ runId, idempotencyKey: 'k1' })
      }
      expect(await tailOf(engine, runId)).toBe(tail)
    }

    await check(first)
    // Park-time snapshots and trimming: more signals move the head past the keyed events.
    for (let i = 0; i < 6; i++) await first.signal(runId, [{ type: 'app.tick', payload: { i } }])
    const bounds = await (await first.store).bounds(runId)
    expect(bounds.head).toBeGreaterThan(tail) // the keyed signal's events are trimmed
    const moved = await tailOf(first, runId)
    await first.stop()

    const restarted = open(path, trimming)
    const retry = await restarted.signal(runId, [note, noteReordered], { idempotencyKey: 'k1' })
    expect(retry.lastSeq).toBe(moved)
    const error = await restarted.signal(runId, [other], { idempotencyKey: 'k1' }).catch((e) => e)
    expect(error.code).toBe('IDEMPOTENCY_CONFLICT')
    expect(await tailOf(restarted, runId)).toBe(moved)
  })

  it('a decision retried with its key returns the state; the same key cannot decide otherwise', async () => {
    const engine = open(join(dir, `keys-${++files}.db`))
    const { runId } = await engine.start(gated, { orderId: 'o1', amount: 5 })
    const [item] = (await engine.project(runId, pendingApprovals)).items
    const done = await engine.signal(runId, [decision(item.approvalId, 'approve')], {
      idempotencyKey: 'decide',
    })
    expect(done.status).toBe('completed')
    // The approval is decided now; a retry still answers with the state, not a refusal.
    const retry = await engine.signal(runId, [decision(item.approvalId, 'approve')], {
      idempotencyKey: 'decide',
    })
    expect(retry).toEqual(done)
    expect(
      await code(
        engine.signal(runId, [decision(item.approvalId, 'reject')], { idempotencyKey: 'decide' }),
      ),
    ).toBe('IDEMPOTENCY_CONFLICT')
  })

  it('50 concurrent signals with one key and 50 bodies: one stored, 49 conflicts; identical retries all succeed', async () => {
    const engine = open(join(dir, `keys-${++files}.db`))
    const { runId } = await engine.start(gated, { orderId: 'o1', amount: 5 })
    const tail = await tailOf(engine, runId)
    const outcomes = await Promise.all(
      Array.from({ length: 50 }, (_, i) =>
        code(
          engine.signal(runId, [{ type: 'app.note', payload: { i } }], { idempotencyKey: 'one' }),
        ),
      ),
    )
    expect(outcomes.filter((c) => c === 'ok')).toHaveLength(1)
    expect(outcomes.filter((c) => c === 'IDEMPOTENCY_CONFLICT')).toHaveLength(49)
    const stored = (await engine.getEvents(runId, { fromSeq: tail + 1 })).filter(
      (e) => e.type === 'app.note',
    )
    expect(stored).toHaveLength(1)

    const same = { type: 'app.note', payload: { same: true } }
    const retries = await Promise.all(
      Array.from({ length: 50 }, () =>
        code(engine.signal(runId, [same], { idempotencyKey: 'two' })),
      ),
    )
    expect(retries.every((c) => c === 'ok')).toBe(true)
    const notes = (await engine.getEvents(runId)).filter((e) => e.type === 'app.note')
    expect(notes.map((e) => e.payload)).toEqual([stored[0].payload, same.payload])
  })

  it('two engines on one file racing with one key: one body stored, the other a conflict', async () => {
    const path = join(dir, `keys-${++files}.db`)
    const a = open(path)
    const b = open(path)
    const { runId } = await a.start(gated, { orderId: 'o1', amount: 5 })
    const [ra, rb] = await Promise.all([
      code(
        a.signal(runId, [{ type: 'app.note', payload: { from: 'a' } }], { idempotencyKey: 'k' }),
      ),
      code(
        b.signal(runId, [{ type: 'app.note', payload: { from: 'b' } }], { idempotencyKey: 'k' }),
      ),
    ])
    expect([ra, rb].sort()).toEqual(['IDEMPOTENCY_CONFLICT', 'ok'])
    const winner = ra === 'ok' ? 'a' : 'b'
    const retry = await (winner === 'a' ? b : a).signal(
      runId,
      [{ type: 'app.note', payload: { from: winner } }],
      { idempotencyKey: 'k' },
    )
    const notes = (await a.getEvents(runId)).filter((e) => e.type === 'app.note')
    expect(notes.map((e) => e.payload)).toEqual([{ from: winner }])
    expect(retry.lastSeq).toBe(await tailOf(a, runId))
  })
})
