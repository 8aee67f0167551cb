import type { Engine } from 'skein'
import { decision, pendingApprovals } from 'skein/approval'
import { afterEach, describe, expect, it } from 'vitest'
import { gated, makeEngine } from '../support/fixtures.js'
import { storeKinds } from '../support/store-kinds.js'

const kinds = storeKinds('idempotency')
let engine: Engine
afterEach(() => engine?.stop())

describe.each(kinds)('idempotent start ($name store)', (kind) => {
  it('same runId, key and identity returns the existing run and appends nothing', async () => {
    ;({ engine } = makeEngine({ store: kind.fresh().open() }))
    const first = await engine.start(
      gated,
      { orderId: 'o1', amount: 5 },
      { runId: 'order-o1', idempotencyKey: 'k1' },
    )
    const tail = (await engine.getEvents('order-o1')).length
    const again = await engine.start(
      gated,
      { amount: 5, orderId: 'o1' },
      { runId: 'order-o1', idempotencyKey: 'k1' },
    )
    expect(again.runId).toBe(first.runId)
    expect(again.threadId).toBe(first.threadId)
    expect((await engine.getEvents('order-o1')).length).toBe(tail)
  })

  it('a different input or key is a START_CONFLICT naming the fields, nothing written', async () => {
    ;({ engine } = makeEngine({ store: kind.fresh().open() }))
    await engine.start(gated, { orderId: 'o1', amount: 5 }, { runId: 'r1', idempotencyKey: 'k1' })
    const tail = (await engine.getEvents('r1')).length
    const error = await engine
      .start(gated, { orderId: 'o1', amount: 6 }, { runId: 'r1', idempotencyKey: 'k2' })
      .catch((e) => e)
    expect(error.code).toBe('START_CONFLICT')
    expect(error.details.fields).toEqual(['input', 'idempotencyKey'])
    expect((await engine.getEvents('r1')).length).toBe(tail)
  })

  it('a key without a runId returns the run that key created; another start under it conflicts', async () => {
    ;({ engine } = makeEngine())
    const first = await engine.start(gated, { orderId: 'o1', amount: 5 }, { idempotencyKey: 'k' })
    const tail = (await engine.getEvents(first.runId)).length
    const again = await engine.startRun({
      kind: 'workflow',
      definitionName: 'gated',
      input: { amount: 5, orderId: 'o1' },
      idempotencyKey: 'k',
    })
    expect(again.runId).toBe(first.runId)
    expect((await engine.getEvents(first.runId)).length).toBe(tail)
    const error = await engine
      .start(gated, { orderId: 'o2', amount: 5 }, { idempotencyKey: 'k' })
      .catch((e) => e)
    expect(error.code).toBe('START_CONFLICT')
    expect(error.details.fields).toEqual(['input'])
    const other = await engine.start(gated, { orderId: 'o1', amount: 5 }, { idempotencyKey: 'k2' })
    expect(other.runId).not.toBe(first.runId)
    expect(await engine.listRuns()).toHaveLength(2)
  })

  it('startRun by kind and name, unknown definitions are DEFINITION_NOT_FOUND with nothing written', async () => {
    ;({ engine } = makeEngine({ store: kind.fresh().open() }))
    const { state } = await engine.startRun({
      kind: 'workflow',
      definitionName: 'gated',
      input: { orderId: 'a', amount: 1 },
      runId: 'byname',
    })
    expect(state.definitionVersion).toBe('v1')
    const error = await engine
      .startRun({ kind: 'workflow', definitionName: 'nope', runId: 'x1' })
      .catch((e) => e)
    expect(error.code).toBe('DEFINITION_NOT_FOUND')
    expect(await engine.listRuns()).toEqual(['byname'])
  })

  it('invalid input is INVALID_INPUT before anything is written', async () => {
    ;({ engine } = makeEngine({ store: kind.fresh().open() }))
    // @ts-expect-error the schema types orderId as a string: JavaScript callers still get here
    const error = await engine.start(gated, { orderId: 1 }, { runId: 'bad' }).catch((e) => e)
    expect(error.code).toBe('INVALID_INPUT')
    expect(error.message).toMatch(/orderId/)
    expect(await engine.listRuns()).toEqual([])
  })
})

describe.each(kinds)('idempotent signals ($name store)', (kind) => {
  it('a repeated key appends nothing: before and after completion, snapshots and trims', async () => {
    ;({ engine } = makeEngine({
      store: kind.fresh().open(),
      trimAfterSnapshot: { keepSnapshots: 1 },
    }))
    const { runId } = await engine.start(gated, { orderId: 'o1', amount: 5 })
    const note = { type: 'shop.note', payload: { text: 'hello' } }
    await engine.signal(runId, [note], { idempotencyKey: 'note-1' })
    const before = (await engine.getRun(runId)).lastSeq
    await engine.signal(runId, [note], { idempotencyKey: 'note-1' })
    expect((await engine.getRun(runId)).lastSeq).toBe(before)
    const [item] = (await engine.project(runId, pendingApprovals)).items
    const done = await engine.signal(runId, [decision(item.approvalId, 'approve')], {
      idempotencyKey: 'decide-1',
    })
    expect(done.status).toBe('completed')
    const bounds = await (await engine.store).bounds(runId)
    expect(bounds.head).toBeGreaterThan(1) // trimmed behind the snapshot taken at completion
    const tail = bounds.tail
    await engine.signal(runId, [note], { idempotencyKey: 'note-1' })
    // The same key with another decision is a conflict now, not a silent no-op (issue 24 §3).
    const conflict = await engine
      .signal(runId, [decision(item.approvalId, 'reject')], { idempotencyKey: 'decide-1' })
      .catch((e) => e)
    expect(conflict.code).toBe('IDEMPOTENCY_CONFLICT')
    await engine.signal(runId, [decision(item.approvalId, 'approve')], {
      idempotencyKey: 'decide-1',
    })
    expect((await (await engine.store).bounds(runId)).tail).toBe(tail)
    // a new key on a terminal run is recorded but wakes nothing
    const after = await engine.signal(runId, [note], { idempotencyKey: 'note-2' })
    // A keyed signal records its key and digest (runtime.signal.received) before its events.
    expect(after.lastSeq).toBe(tail + 2)
    expect(after.status).toBe('completed')
  })

  it('refuses runtime.* types, unknown catalog events, non-JSON and oversized payloads, writing nothing', async () => {
    ;({ engine } = makeEngine({ store: kind.fresh().open(), limits: { maxEventBytes: 1000 } }))
    const { runId } = await engine.start(gated, { orderId: 'o1', amount: 5 })
    const tail = (await engine.getEvents(runId)).length
    const attempts: any[] = [
      [{ type: 'runtime.run.completed', payload: {} }],
      [{ type: 'approval.bogus', payload: {} }],
      [{ type: 'approval.decided', payload: { outcome: 'approve' } }],
      [{ type: 'test.ping', payload: { n: 'not a number' } }],
      [{ type: 'app.x', payload: { when: new Date() } }],
      [{ type: 'app.x', payload: { big: 'x'.repeat(2000) } }],
      [{ type: 'app.x', payload: nest(70) }],
      [
        { type: 'app.ok', payload: {} },
        { type: '', payload: {} },
      ],
      [],
    ]
    for (const events of attempts) {
      const error = await engine.signal(runId, events).catch((e) => e)
      expect(error.code, JSON.stringify(events).slice(0, 80)).toBe('INVALID_EVENT')
    }
    const unknownThread = await engine
      .signal(runId, [{ type: 'app.x', threadId: 'nope' }])
      .catch((e) => e)
    expect(unknownThread.code).toBe('INVALID_EVENT')
    expect((await engine.getEvents(runId)).length).toBe(tail)
    expect((await engine.getRun('missing').catch((e) => e)).code).toBe('RUN_NOT_FOUND')
    expect((await engine.signal('missing', [{ type: 'app.x' }]).catch((e) => e)).code).toBe(
      'RUN_NOT_FOUND',
    )
  })
})

function nest(depth: number): unknown {
  let value: unknown = 1
  for (let i = 0; i < depth; i++) value = { v: value }
  return value
}
