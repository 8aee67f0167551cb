import { type ChildProcess, spawn } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { bearerAuth, createEngine, type Engine, httpWorkerQueue, type ServerHandle } from 'skein'
import { defineWorkflow, workflow } from 'skein/workflow'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { childWithin } from '../support/children.js'
import { workerEffects } from './helpers.js'

const child = fileURLToPath(new URL('./worker-child.ts', import.meta.url))
const TOKEN = 'worker-token-e2e-0123456789'

const flow = (mode?: string) =>
  defineWorkflow({
    name: `e2e-${mode ?? 'ok'}`,
    nodes: {
      a: { run: (ctx) => ctx.invoke('w.plain', { n: 21, mode }) },
      b: { after: ['a'], run: ({ results }) => ({ got: results.a }) },
    },
  })
const ok = flow()
const terminal = flow('terminal')
const waiting = flow('wait-cancel')

let engine: Engine
let server: ServerHandle
let proc: ChildProcess

/** Polls the engine (not a timer under test: the other process runs on the wall clock). */
async function until<T>(read: () => Promise<T>, done: (v: T) => boolean, ms = 15_000): Promise<T> {
  const end = Date.now() + ms
  for (;;) {
    const value = await read()
    if (done(value)) return value
    if (Date.now() > end) throw new Error(`timed out; last value ${JSON.stringify(value)}`)
    await new Promise((r) => setTimeout(r, 25))
  }
}

beforeAll(async () => {
  engine = createEngine({
    modules: [workflow({ definitions: [ok, terminal, waiting] }), workerEffects],
    worker: httpWorkerQueue(),
    authorize: bearerAuth({ worker: TOKEN }),
  })
  server = await engine.serve({ port: 0 })
  proc = spawn(
    process.execPath,
    ['--conditions=skein-source', '--import', 'tsx', child, server.url, TOKEN],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  )
  let out = ''
  let err = ''
  proc.stderr?.on('data', (d) => {
    err += d
  })
  const worker = { name: 'the worker', proc, output: () => `${out}\n${err}` }
  await childWithin(
    'the worker ready',
    worker,
    new Promise<void>((resolve, reject) => {
      proc.stdout?.on('data', (d) => {
        out += d
        if (out.includes('ready')) resolve()
      })
      proc.on('exit', (code) => reject(new Error(`worker exited ${code}: ${err}`)))
    }),
    20_000,
  )
}, 30_000)

afterAll(async () => {
  proc?.kill('SIGTERM')
  await server?.close()
  await engine?.stop()
})

describe('a worker process polling over HTTP with a worker token', () => {
  it('claims, runs and completes with events; the run continues', async () => {
    const { runId } = await engine.start(ok)
    const state = await until(
      () => engine.getRun(runId),
      (s) => s.status !== 'running',
    )
    expect(state.status).toBe('completed')
    expect(state.output).toMatchObject({ b: { got: { doubled: 42 } } })
    const types = (await engine.getEvents(runId)).map((e) => e.type)
    const i = types.indexOf('w.shipped')
    expect(types.slice(i - 2, i + 2)).toEqual([
      'runtime.effect.dispatched',
      'runtime.effect.attempt.started',
      'w.shipped',
      'runtime.effect.completed',
    ])
    const completed = (await engine.getEvents(runId))[i + 1]
    expect(completed.origin).toBe('worker')
    expect((completed.payload as any).result.pid).toBe(proc.pid)
  })

  it('a TerminalError in the worker fails the effect without retry', async () => {
    const { runId } = await engine.start(terminal)
    const state = await until(
      () => engine.getRun(runId),
      (s) => s.status !== 'running',
    )
    expect(state.status).toBe('failed')
    const failed = (await engine.getEvents(runId)).filter((e) => e.type === 'runtime.effect.failed')
    expect(failed.map((e) => (e.payload as any).final)).toEqual([true])
  })

  it('cancel reaches a running worker through its heartbeat, which acknowledges', async () => {
    const { runId } = await engine.start(waiting)
    await until(
      () => engine.getEvents(runId),
      (events) => events.some((e) => e.type === 'runtime.effect.attempt.started'),
    )
    await engine.cancel(runId)
    const events = await until(
      () => engine.getEvents(runId),
      (list) => list.some((e) => e.type === 'runtime.effect.cancelled'),
    )
    const types = events.map((e) => e.type)
    expect(types.indexOf('runtime.effect.cancel.requested')).toBeLessThan(
      types.indexOf('runtime.effect.cancelled'),
    )
    expect(events.find((e) => e.type === 'runtime.effect.cancelled')!.origin).toBe('worker')
  })

  it('the claim route refuses a missing or wrong token', async () => {
    const claim = (auth?: string) =>
      fetch(`${server.url}/workers/tasks/claim`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...(auth ? { authorization: auth } : {}) },
        body: '{}',
      })
    expect((await claim()).status).toBe(401)
    expect((await claim('Bearer nope')).status).toBe(401)
  })
})
