import { createEngine, type Engine, type EngineOptions } from 'skein'
import { afterEach } from 'vitest'

/**
 * `createEngine` for one test file: every engine it makes is stopped after the test that made
 * it. Call it at the top of the file (it registers the file's `afterEach`).
 */
export function enginesStoppedAfterEach(): (options: EngineOptions) => Engine {
  const running: Engine[] = []
  afterEach(async () => {
    await Promise.all(running.splice(0).map((engine) => engine.stop()))
  })
  return (options) => {
    const engine = createEngine(options)
    running.push(engine)
    return engine
  }
}
