import { createEngine, type EventStore, memoryStore } from 'skein'
import { defineWorkflow, workflow } from 'skein/workflow'
import { describe, expect, it } from 'vitest'

// A run id the engine generates cannot be in the store yet, so starting it reads nothing of
// the run first; the append's expected tail of 0 still fences an id that collides. A caller's
// id may name a stored run, so its start looks the run up (its tail or its log).

const hello = defineWorkflow({ name: 'hello', nodes: { a: { run: () => 'hi' } } })

/** `store` noting each run whose tail or log is read. */
function countingLookups(store: EventStore) {
  const tails: string[] = []
  const counted: EventStore = Object.assign(Object.create(store), {
    tail: (runId: string) => {
      tails.push(runId)
      return store.tail(runId)
    },
    read: (runId: string, ...rest: unknown[]) => {
      tails.push(runId)
      return (store.read as (...args: unknown[]) => unknown)(runId, ...rest)
    },
  })
  return { store: counted, tails }
}

let n = 0
const ids = (fixedRunId?: string) => ({
  runId: () => fixedRunId ?? `run_gen${++n}`,
  threadId: () => `thr_${++n}`,
  eventId: () => `evt_${++n}`,
  effectId: () => `eff_${++n}`,
  waitId: () => `wait_${++n}`,
  timerId: () => `tmr_${++n}`,
})

describe('generated run ids', () => {
  it('a start with a generated id reads nothing of its run; one with a caller id looks it up', async () => {
    const { store, tails } = countingLookups(memoryStore())
    const engine = createEngine({ modules: [workflow({ definitions: [hello] })], store })
    await engine.ready()
    const generated = await engine.start(hello)
    expect(generated.state.status).toBe('completed')
    expect(tails).not.toContain(generated.runId)
    const given = await engine.start(hello, undefined, { runId: 'run_given' })
    expect(given.state.status).toBe('completed')
    expect(tails).toContain('run_given')
    await engine.stop()
  })

  it('a generated id that collides with a stored run is fenced and the log is untouched', async () => {
    const base = memoryStore()
    const first = createEngine({
      modules: [workflow({ definitions: [hello] })],
      store: base,
      ids: ids('run_same'),
    })
    const a = await first.start(hello)
    await first.stop()
    const before = await base.read(a.runId)
    const second = createEngine({
      modules: [workflow({ definitions: [hello] })],
      store: base,
      ids: ids('run_same'),
    })
    // Same definition and input, no idempotency key: the existing run is returned as it is.
    const b = await second.start(hello)
    expect(b.runId).toBe('run_same')
    expect(b.state.status).toBe('completed')
    expect(await base.read('run_same')).toEqual(before)
    await second.stop()
  })
})
