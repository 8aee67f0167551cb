// `runHttpWorker` over a real loopback server: a busy worker's outcomes ride its next claim
// (docs/workers.md, "Outcomes ride the claim"), and an outcome that finishes while a claim is
// on its way goes in a batch at once. Requests are counted by the worker's own `fetch`.
import { bearerAuth, createEngine, type Engine, httpWorkerQueue, runHttpWorker } from 'skein'
import { workflow } from 'skein/workflow'
import { afterEach, describe, expect, it } from 'vitest'
import { waitFor } from '../support/children.js'
import { FLOWS, workerEffects } from './helpers.js'

const TOKEN = 'worker-token-http-worker-0123456789'
const flow = FLOWS.find((f) => f.name === 'flow-w.plain')!

interface Sent {
  path: string
  carried: number
  tasks?: number
  answered: boolean
}

/** A fetch that records each request's path, how many outcomes it carried and its answer. */
function countingFetch(sent: Sent[]): typeof fetch {
  return async (url, init) => {
    const body = JSON.parse(String(init?.body ?? '{}'))
    const entry: Sent = {
      path: new URL(String(url)).pathname,
      carried: body.callbacks?.length ?? 0,
      answered: false,
    }
    sent.push(entry)
    const res = await fetch(url, init)
    entry.answered = true
    if (entry.path === '/workers/tasks/claim' && res.ok) {
      entry.tasks = (await res.clone().json()).tasks.length
    }
    return res
  }
}

const open: Array<() => Promise<void>> = []
afterEach(async () => {
  for (const close of open.splice(0).reverse()) await close()
})

async function host(): Promise<{ engine: Engine; url: string }> {
  const engine = createEngine({
    modules: [workflow({ definitions: [flow] }), workerEffects],
    worker: httpWorkerQueue(),
    authorize: bearerAuth({ worker: TOKEN }),
  })
  const server = await engine.serve({ port: 0 })
  open.push(async () => {
    await server.close()
    await engine.stop()
  })
  return { engine, url: server.url }
}

/** Polls the engine (the worker runs on the wall clock; nothing here is a timed assert). */
async function allFinished(engine: Engine, runIds: string[]): Promise<string[]> {
  const end = Date.now() + 20_000
  for (;;) {
    const states = await Promise.all(runIds.map((id) => engine.getRun(id)))
    if (states.every((s) => s.status !== 'running') || Date.now() > end) {
      return states.map((s) => s.status)
    }
    await new Promise((r) => setTimeout(r, 20))
  }
}

describe('runHttpWorker', () => {
  it('a busy worker reports what it finished in its next claim: one request per batch of tasks', async () => {
    const { engine, url } = await host()
    const runIds = Array.from({ length: 16 }, (_, i) => `ride-${i}`)
    for (const runId of runIds) await engine.start(flow, undefined, { runId })
    await (await engine.runtime).idle()
    const sent: Sent[] = []
    const worker = runHttpWorker({
      url,
      token: TOKEN,
      concurrency: 16,
      waitMs: 20_000,
      fetch: countingFetch(sent),
      handle: (task) => ({ doubled: (task.input as { n: number }).n * 2 }),
    })
    open.push(() => worker.stop())
    expect(await allFinished(engine, runIds)).toEqual(runIds.map(() => 'completed'))
    expect(sent.map((s) => s.path)).toEqual(['/workers/tasks/claim', '/workers/tasks/claim'])
    expect(sent[0].tasks).toBe(16)
    // The second claim carried all 16 outcomes and is still waiting for more tasks.
    expect(sent[1]).toMatchObject({ carried: 16, answered: false })
    expect((await engine.getRun('ride-3')).output).toEqual({
      a: { doubled: 2 },
      b: { got: { doubled: 2 } },
    })
  })

  it('an outcome that finishes while a claim waits is posted in a batch at once', async () => {
    const { engine, url } = await host()
    await engine.start(flow, undefined, { runId: 'gated' })
    await (await engine.runtime).idle()
    let release = () => {}
    const gate = new Promise<void>((resolve) => {
      release = resolve
    })
    let handed = 0
    const sent: Sent[] = []
    const worker = runHttpWorker({
      url,
      token: TOKEN,
      concurrency: 2,
      waitMs: 20_000,
      fetch: countingFetch(sent),
      handle: async () => {
        handed++
        await gate
        return 'done'
      },
    })
    open.push(() => worker.stop())
    // The handler holds the task and the worker's next claim (for the free slot) is waiting.
    await waitFor(
      'the handler holding its task and the second claim waiting',
      () => handed > 0 && sent.length >= 2,
      {
        withinMs: 20_000,
        seen: () => `handed ${handed}, sent ${sent.map((s) => s.path).join(', ') || 'nothing'}`,
      },
    )
    release()
    expect(await allFinished(engine, ['gated'])).toEqual(['completed'])
    expect(sent.map((s) => [s.path, s.carried])).toEqual([
      ['/workers/tasks/claim', 0],
      ['/workers/tasks/claim', 0],
      ['/workers/tasks/callbacks', 1],
    ])
    expect(sent[1].answered).toBe(false)
  })
  it('against an engine that refuses outcomes in a claim, posts them in batches and works on', async () => {
    const { engine, url } = await host()
    const runIds = Array.from({ length: 8 }, (_, i) => `older-${i}`)
    for (const runId of runIds) await engine.start(flow, undefined, { runId })
    await (await engine.runtime).idle()
    const sent: Sent[] = []
    const counting = countingFetch(sent)
    // An engine from before the field: its body check refuses `callbacks` in a claim.
    const olderEngine: typeof fetch = async (input, init) => {
      const body = JSON.parse(String(init?.body ?? '{}'))
      if (new URL(String(input)).pathname === '/workers/tasks/claim' && 'callbacks' in body) {
        sent.push({ path: '/workers/tasks/claim', carried: body.callbacks.length, answered: true })
        const message = 'body has unknown field(s): callbacks'
        return Response.json({ error: { code: 'INVALID_REQUEST', message } }, { status: 400 })
      }
      return counting(input, init)
    }
    const errors: unknown[] = []
    const worker = runHttpWorker({
      url,
      token: TOKEN,
      concurrency: 4,
      waitMs: 20_000,
      fetch: olderEngine,
      onError: (error) => errors.push(error),
      handle: (task) => ({ doubled: (task.input as { n: number }).n * 2 }),
    })
    open.push(() => worker.stop())
    expect(await allFinished(engine, runIds)).toEqual(runIds.map(() => 'completed'))
    // One refused claim, then claims without outcomes and the outcomes in batches of their own.
    expect(sent.filter((s) => s.path === '/workers/tasks/claim' && s.carried > 0)).toHaveLength(1)
    const batches = sent.filter((s) => s.path === '/workers/tasks/callbacks')
    expect(batches.reduce((n, s) => n + s.carried, 0)).toBeGreaterThanOrEqual(runIds.length)
    expect(errors).toHaveLength(0)
  })
})
