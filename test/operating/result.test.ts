// engine.result: resolves with the output once the run completes, rejects with the run's
// failure or cancellation, and with its own RESULT_TIMEOUT; across engines on one SQLite file
// or Postgres schema it hears the other engine's commits through the store's change feed.
import { createEngine, type Engine, SkeinError } from 'skein'
import { workflow } from 'skein/workflow'
import { afterEach, describe, expect, it } from 'vitest'
import { storeKinds } from '../support/store-kinds.js'
import { breaks, waits } from './result-workflows.js'

const kinds = storeKinds('result')
const engines: Engine[] = []
afterEach(async () => {
  for (const engine of engines.splice(0)) await engine.stop()
})

const modules = () => [workflow({ definitions: [waits, breaks] })]
const engineOn = (store: ReturnType<ReturnType<(typeof kinds)[number]['fresh']>['open']>) => {
  const engine = createEngine({ store, modules: modules() })
  engines.push(engine)
  return engine
}
const go = [{ type: 'app.go', payload: { ok: 42 } }]
const codeOf = (promise: Promise<unknown>) =>
  promise.then(
    () => 'resolved',
    (error: unknown) => (SkeinError.is(error) ? error : String(error)),
  )

describe.each(kinds)('engine.result on $name', (kind) => {
  it('resolves with the output of a run that completes later, and of one already finished', async () => {
    const engine = engineOn(kind.fresh().open())
    const { runId } = await engine.start(waits)
    const pending = engine.result(runId)
    let settled = false
    void pending.finally(() => (settled = true))
    await engine.getRun(runId)
    expect(settled).toBe(false)
    await engine.signal(runId, go)
    const output = await pending
    expect((await engine.getRun(runId)).status).toBe('completed')
    expect(output).toEqual((await engine.getRun(runId)).output)
    expect(JSON.stringify(output)).toContain('42')
    expect(await engine.result(runId)).toEqual(output)
  })

  it("rejects with RUN_FAILED carrying the run's error, and RUN_CANCELLED", async () => {
    const engine = engineOn(kind.fresh().open())
    const failing = await engine.start(breaks)
    const failed = codeOf(engine.result(failing.runId))
    await engine.signal(failing.runId, go)
    const error = (await failed) as SkeinError
    expect(error.code).toBe('RUN_FAILED')
    const state = await engine.getRun(failing.runId)
    expect(state.status).toBe('failed')
    expect((error.details as { error: unknown }).error).toEqual(state.error)

    const cancelling = await engine.start(waits)
    const cancelled = codeOf(engine.result(cancelling.runId))
    await engine.cancel(cancelling.runId)
    expect(((await cancelled) as SkeinError).code).toBe('RUN_CANCELLED')
  })

  it('times out with RESULT_TIMEOUT and leaves the run going; refuses bad input', async () => {
    const engine = engineOn(kind.fresh().open())
    const { runId } = await engine.start(waits)
    const error = (await codeOf(engine.result(runId, { timeoutMs: 30 }))) as SkeinError
    expect(error.code).toBe('RESULT_TIMEOUT')
    expect(error.details).toMatchObject({ runId, status: 'running', timeoutMs: 30 })
    expect((await engine.getRun(runId)).status).toBe('running')
    for (const timeoutMs of [-1, 1.5, Number.NaN, 2 ** 31]) {
      expect(((await codeOf(engine.result(runId, { timeoutMs }))) as SkeinError).code).toBe(
        'INVALID_REQUEST',
      )
    }
    expect(((await codeOf(engine.result('no-such-run'))) as SkeinError).code).toBe('RUN_NOT_FOUND')
  })

  it('ends a pending result with ENGINE_STOPPED when the engine stops', async () => {
    const engine = createEngine({ store: kind.fresh().open(), modules: modules() })
    const { runId } = await engine.start(waits)
    const pending = codeOf(engine.result(runId))
    await engine.getRun(runId)
    await engine.stop()
    expect(((await pending) as SkeinError).code).toBe('ENGINE_STOPPED')
  })

  if (kind.name !== 'memory') {
    it('resolves on an engine that is not the one driving the run (shared store)', async () => {
      const storage = kind.fresh()
      const driver = engineOn(storage.open())
      const watcher = engineOn(storage.open())
      const { runId } = await driver.start(waits)
      const pending = watcher.result(runId)
      await watcher.getRun(runId)
      await driver.signal(runId, go)
      expect(await pending).toEqual((await driver.getRun(runId)).output)
    })
  }
})
