// createEngine({ logger }): quiet by default; pino, console and consoleLogger() work; the
// engine logs boot, failed runs, failed and retried attempts, wake failures, listening, stop.
import { Writable } from 'node:stream'
import pino from 'pino'
import {
  consoleLogger,
  createEngine,
  defineEffect,
  defineModule,
  type Engine,
  type EngineOptions,
  memoryStore,
} from 'skein'
import { faultyStore, manualClock } from 'skein/testing'
import { defineWorkflow, workflow } from 'skein/workflow'
import { afterEach, describe, expect, it, vi } from 'vitest'

const flaky = defineModule({
  namespace: 'svc',
  effects: {
    flaky: defineEffect<null, string>({
      retry: { maxAttempts: 3, backoffMs: 100 },
      execute: (_input, ctx) => {
        if (ctx.attempt === 1) throw new Error('upstream unavailable')
        return 'ok'
      },
    }),
  },
})
const retried = defineWorkflow({
  name: 'retried',
  nodes: { call: { run: (ctx) => ctx.invoke('svc.flaky') } },
})
const broken = defineWorkflow({
  name: 'broken',
  nodes: {
    boom: {
      run: () => {
        throw new Error('bad input')
      },
    },
  },
})
const nap = defineWorkflow({ name: 'nap', nodes: { s: { run: (ctx) => ctx.sleep(1000) } } })

const engines: Engine[] = []
afterEach(async () => {
  vi.restoreAllMocks()
  await Promise.all(engines.splice(0).map((e) => e.stop()))
})
function make(options: EngineOptions = {}) {
  const clock = manualClock()
  const engine = createEngine({
    modules: [workflow({ definitions: [retried, broken, nap] }), flaky],
    clock,
    ...options,
  })
  engines.push(engine)
  return { engine, clock }
}

/** A real pino logger writing JSON lines into an array. */
function pinoLines() {
  const lines: any[] = []
  const destination = new Writable({
    write(chunk, _encoding, done) {
      for (const line of String(chunk).split('\n')) if (line) lines.push(JSON.parse(line))
      done()
    },
  })
  return { logger: pino({ level: 'debug' }, destination), lines }
}

describe('the logger option', () => {
  it('is quiet by default: a failing run prints nothing', async () => {
    const spies = [
      ...(['log', 'info', 'warn', 'error', 'debug'] as const).map((m) =>
        vi.spyOn(console, m).mockImplementation(() => {}),
      ),
      vi.spyOn(process.stdout, 'write'),
      vi.spyOn(process.stderr, 'write'),
    ]
    const { engine } = make()
    const { state } = await engine.start(broken)
    expect(state.status).toBe('failed')
    await engine.stop()
    for (const spy of spies) expect(spy).not.toHaveBeenCalled()
  })

  it('pino gets boot, failed and retried attempts, failed runs, listening and stop', async () => {
    const { logger, lines } = pinoLines()
    const { engine, clock } = make({ logger })
    await engine.ready()
    const { runId } = await engine.start(retried)
    await clock.advance(100)
    expect((await engine.getRun(runId)).status).toBe('completed')
    const failed = await engine.start(broken)
    const server = await engine.serve({ port: 0 })
    await engine.stop()
    await new Promise((r) => setImmediate(r))
    const byMsg = (prefix: string) => lines.find((l) => String(l.msg).startsWith(prefix))
    expect(byMsg('engine ready')).toMatchObject({ level: 30, scheduled: 0, dueNow: 0 })
    expect(byMsg('effect svc.flaky of run')).toMatchObject({
      level: 40,
      runId,
      type: 'svc.flaky',
      attempt: 1,
      reason: 'error',
      message: 'upstream unavailable',
      retryInMs: 100,
    })
    expect(byMsg(`run ${failed.runId} failed`)).toMatchObject({
      level: 50,
      runId: failed.runId,
      definitionName: 'broken',
      code: 'NODE_FAILED',
      message: 'node boom failed: bad input',
    })
    expect(byMsg('listening on')).toMatchObject({ level: 30, url: server.url })
    expect(byMsg('engine stopped')).toMatchObject({ level: 30, graceMs: 0 })
  })

  it('a deadline wake that fails is logged with its retry', async () => {
    const { logger, lines } = pinoLines()
    const store = faultyStore(memoryStore())
    const { engine, clock } = make({ logger, store })
    const { runId } = await engine.start(nap)
    store.failNext('append', 'before', { runId })
    await clock.advance(1000)
    expect(
      lines.find((l) => String(l.msg).startsWith(`deadline wake of run ${runId} failed`)),
    ).toMatchObject({ level: 50, runId, retryInMs: 1000 })
    await clock.advance(1000)
    expect((await engine.getRun(runId)).status).toBe('completed')
  })

  it('console works as a logger (fields, then the message)', async () => {
    const error = vi.spyOn(console, 'error').mockImplementation(() => {})
    const { engine } = make({ logger: console })
    const { runId } = await engine.start(broken)
    expect(error).toHaveBeenCalledWith(
      expect.objectContaining({ runId, code: 'NODE_FAILED' }),
      `run ${runId} failed: NODE_FAILED: node boom failed: bad input`,
    )
  })

  it('a logger that throws never affects a run; a value that is not a logger is refused', async () => {
    const throwing = () => {
      throw new Error('logger down')
    }
    const { engine } = make({
      logger: { debug: throwing, info: throwing, warn: throwing, error: throwing },
    })
    expect((await engine.start(broken)).state.status).toBe('failed')
    expect(() => createEngine({ logger: 'verbose' as never })).toThrow(/logger must have/)
  })
})

describe('consoleLogger()', () => {
  const at = () => Date.UTC(2026, 0, 2, 3, 4, 5)
  it('writes JSON lines, or pretty lines, from the given level up', () => {
    const out: string[] = []
    const json = consoleLogger({
      format: 'json',
      level: 'warn',
      write: (l) => out.push(l),
      now: at,
    })
    json.info({ runId: 'r' }, 'not shown')
    json.warn({ runId: 'r', attempt: 2 }, 'effect failed')
    expect(out).toEqual([
      '{"time":"2026-01-02T03:04:05.000Z","level":"warn","msg":"effect failed","runId":"r","attempt":2}\n',
    ])
    out.length = 0
    const pretty = consoleLogger({ write: (l) => out.push(l), now: at })
    pretty.debug({}, 'not shown')
    pretty.error({ runId: 'r', message: 'bad input', n: 1 }, 'run r failed')
    expect(out).toEqual([
      '2026-01-02T03:04:05.000Z ERROR run r failed runId=r message="bad input" n=1\n',
    ])
    expect(() => consoleLogger({ level: 'loud' as never })).toThrow(/level/)
  })
})
