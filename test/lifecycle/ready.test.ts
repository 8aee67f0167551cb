// The engine boots when it is created; ready() (also awaitable bare) reports how that went.
import { createEngine, type Engine, type Logger, memoryStore, type Observation } from 'skein'
import { afterEach, describe, expect, it } from 'vitest'

const engines: Engine[] = []
afterEach(async () => {
  await Promise.all(engines.splice(0).map((e) => e.stop()))
})
const make = (options: Parameters<typeof createEngine>[0]) => {
  const engine = createEngine(options)
  engines.push(engine)
  return engine
}
const turns = async (n = 5) => {
  for (let i = 0; i < n; i++) await new Promise((r) => setImmediate(r))
}

function recordingLogger() {
  const lines: Array<{ level: string; fields: Record<string, unknown>; message?: string }> = []
  const at = (level: string) => (fields: Record<string, unknown>, message?: string) =>
    lines.push({ level, fields, message })
  const logger: Logger = {
    debug: at('debug'),
    info: at('info'),
    warn: at('warn'),
    error: at('error'),
  }
  return { logger, lines }
}

describe('boot at creation', () => {
  it('opens the store without waiting for a call', async () => {
    let opened = 0
    make({
      store: async () => {
        opened++
        return memoryStore()
      },
    })
    await turns()
    expect(opened).toBe(1)
  })

  it('`await engine.ready` without the call waits for the boot and gives the store', async () => {
    const store = memoryStore()
    const engine = make({ store })
    const ready = await engine.ready
    expect(ready.store).toBe(store)
    expect(typeof ready.runtime.idle).toBe('function')
    expect((await engine.ready()).store).toBe(store)
  })

  it('a failed boot rejects ready(), reaches the observer and the logger, and the next call retries it', async () => {
    let attempts = 0
    const observations: Observation[] = []
    const { logger, lines } = recordingLogger()
    const engine = make({
      store: async () => {
        if (++attempts === 1) throw new Error('database is locked')
        return memoryStore()
      },
      observer: (o) => observations.push(o),
      logger,
    })
    await expect(engine.ready()).rejects.toThrow('database is locked')
    expect(observations).toContainEqual(
      expect.objectContaining({ type: 'boot.failed', error: 'database is locked' }),
    )
    expect(lines).toContainEqual(
      expect.objectContaining({
        level: 'error',
        fields: { code: 'ERROR', message: 'database is locked' },
      }),
    )
    expect(await engine.listRuns()).toEqual([])
    expect(attempts).toBe(2)
    expect(lines.some((l) => l.level === 'info' && l.message?.startsWith('engine ready'))).toBe(
      true,
    )
  })
})
