import { type EventEnvelope, memoryStore, UnsupportedProtocolError } from 'skein'
import { manualClock, replayLog } from 'skein/testing'
import { workflow } from 'skein/workflow'
import { describe, expect, it } from 'vitest'
import { enginesStoppedAfterEach } from '../support/engines.js'
import { definitions, gated, testEffects } from '../support/fixtures.js'

const newEngine = enginesStoppedAfterEach()
const modules = () => [workflow({ definitions }), testEffects]
const input = { orderId: 'o-1', amount: 5 }

/** A real run's log, recorded by this Skein. */
async function recordedLog(): Promise<EventEnvelope[]> {
  const store = memoryStore()
  const engine = newEngine({ modules: modules(), store, clock: manualClock() })
  const { runId } = await engine.start(gated, input, { runId: 'run-1' })
  return store.read(runId)
}

/** The same log as if a newer Skein had written it with protocol `version`. */
function withProtocol(events: EventEnvelope[], version: unknown): EventEnvelope[] {
  return events.map((e) =>
    e.type === 'runtime.run.started'
      ? { ...e, payload: { ...(e.payload as object), protocolVersion: version } as any }
      : e,
  )
}

async function storeWith(events: EventEnvelope[]) {
  const store = memoryStore()
  await store.append(events[0].runId, events, { expectedSeq: 0 })
  return store
}

describe('the log protocol version', () => {
  it('is recorded in runtime.run.started and in every snapshot', async () => {
    const store = memoryStore()
    const engine = newEngine({ modules: modules(), store, clock: manualClock() })
    const { runId } = await engine.start(gated, input)
    const [started] = await store.read(runId, { limit: 1 })
    expect(started.payload).toMatchObject({ protocolVersion: 1 })
    const snapshot = await store.snapshots!.latest(runId)
    expect((snapshot!.data as any).protocol).toBe(1)
  })

  it('a log recorded with a newer protocol is refused with the run, the version and what to do; nothing is written', async () => {
    const events = withProtocol(await recordedLog(), 2)
    const store = await storeWith(events)
    const engine = newEngine({ modules: modules(), store, clock: manualClock() })
    const error = await engine.getRun('run-1').catch((e) => e)
    expect(UnsupportedProtocolError.is(error)).toBe(true)
    expect(error.code).toBe('UNSUPPORTED_PROTOCOL')
    expect(error.message).toContain('run run-1')
    expect(error.message).toContain('protocol version 2')
    expect(error.message).toContain('Upgrade')
    expect(error.details).toMatchObject({ runId: 'run-1', protocolVersion: 2, supported: 1 })
    const signalled = await engine
      .signal('run-1', [{ type: 'app.note', payload: {} }])
      .catch((e) => e)
    expect(signalled.code).toBe('UNSUPPORTED_PROTOCOL')
    expect((await engine.wake('run-1').catch((e) => e)).code).toBe('UNSUPPORTED_PROTOCOL')
    expect(await store.tail('run-1')).toBe(events.length)
    const response = (await engine.fetch(new Request('http://skein.test/runs/run-1')))!
    expect(response.status).toBe(500)
    expect((await response.json()).error).toMatchObject({ code: 'UNSUPPORTED_PROTOCOL' })
    expect(() => replayLog(modules(), events)).toThrow(/protocol version 2/)
  })

  it('a protocol value that is not a version is refused too', async () => {
    const store = await storeWith(withProtocol(await recordedLog(), 'v2'))
    const engine = newEngine({ modules: modules(), store, clock: manualClock() })
    expect((await engine.getRun('run-1').catch((e) => e)).code).toBe('UNSUPPORTED_PROTOCOL')
  })

  it('a snapshot of a run recorded with a newer protocol is refused (a trimmed log has only the snapshot)', async () => {
    const store = memoryStore()
    const trimming = { trimAfterSnapshot: { keepSnapshots: 1 } }
    const engine = newEngine({ modules: modules(), store, clock: manualClock(), ...trimming })
    const { runId } = await engine.start(gated, input)
    await engine.signal(runId, [{ type: 'app.note', payload: {} }])
    const snapshot = (await store.snapshots!.latest(runId))!
    expect((await store.bounds(runId)).head).toBe(snapshot.seq + 1)
    await store.snapshots!.save({
      ...snapshot,
      data: { ...(snapshot.data as object), protocol: 2 },
    })
    const reader = newEngine({ modules: modules(), store, clock: manualClock(), ...trimming })
    const error = await reader.getRun(runId).catch((e) => e)
    expect(error.code).toBe('UNSUPPORTED_PROTOCOL')
    expect(error.message).toContain(`snapshot at seq ${snapshot.seq}`)
    expect((await reader.wake(runId).catch((e) => e)).code).toBe('UNSUPPORTED_PROTOCOL')
  })

  it('a log without a version (written before it existed) folds as version 1, exactly as before', async () => {
    const events = await recordedLog()
    const unversioned = events.map((e) => {
      if (e.type !== 'runtime.run.started') return e
      const { protocolVersion: _, ...payload } = e.payload as any
      return { ...e, payload }
    })
    expect(replayLog(modules(), unversioned)).toEqual(replayLog(modules(), events))
    const store = await storeWith(unversioned)
    const engine = newEngine({ modules: modules(), store, clock: manualClock() })
    expect((await engine.getRun('run-1')).status).toBe('running')
  })
})
