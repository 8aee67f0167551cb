import { createEngine, type Engine, type QueueInfo } from 'skein'
import { createEngineClient } from 'skein/client'
import { defineWorkflow, workflow } from 'skein/workflow'
import { afterEach, describe, expect, it } from 'vitest'
import { runCli } from '../../src/cli/index.js'

const engines: Engine[] = []
afterEach(async () => {
  await Promise.all(engines.splice(0).map((engine) => engine.stop()))
})

const gated = defineWorkflow({
  name: 'gated',
  flow: { concurrency: { limit: 1, key: (input: { tenant: string }) => input.tenant } },
  nodes: { wait: { run: (ctx) => ctx.waitFor('app.go') } },
})
const plain = defineWorkflow({ name: 'plain', nodes: { n: { run: () => 1 } } })

describe('flow control: operating the queues', () => {
  it('engine.queues(), GET /queues, client.queues() and skein queues list every key', async () => {
    const engine = createEngine({ modules: [workflow({ definitions: [gated, plain] })] })
    engines.push(engine)
    expect(await engine.queues()).toEqual([])
    await engine.start(gated, { tenant: 'a' })
    await engine.start(gated, { tenant: 'a' })
    await engine.start(gated, { tenant: 'a' })
    await engine.start(gated, { tenant: 'b' })
    await engine.start(plain, undefined, { startAt: Date.now() + 60_000 })
    const expected: Array<Partial<QueueInfo>> = [
      { queue: 'workflow:gated', key: 'a', limit: 1, active: 1, queued: 2 },
      { queue: 'workflow:gated', key: 'b', limit: 1, active: 1, queued: 0, oldestWaitMs: null },
      { queue: 'workflow:plain', key: '', limit: null, active: 0, queued: 1 },
    ]
    const queues = await engine.queues()
    expect(queues).toMatchObject(expected)
    expect(queues[0]?.oldestWaitMs).toBeGreaterThanOrEqual(0)

    const server = await engine.serve({ port: 0 })
    try {
      const response = await fetch(`${server.url}/queues`)
      expect(response.status).toBe(200)
      expect((await response.json()).queues).toMatchObject(expected)
      const client = createEngineClient({ baseUrl: `${server.url}/` })
      expect((await client.queues()).queues).toMatchObject(expected)
      let stdout = ''
      const code = await runCli(['queues', '--json'], {
        stdout: { write: (t: string) => (stdout += t) },
        stderr: { write: () => {} },
        env: { SKEIN_URL: server.url },
      })
      expect(code).toBe(0)
      expect(JSON.parse(stdout).queues).toMatchObject(expected)
      stdout = ''
      await runCli(['queues'], {
        stdout: { write: (t: string) => (stdout += t) },
        stderr: { write: () => {} },
        env: { SKEIN_URL: server.url },
      })
      expect(stdout).toMatch(/QUEUE\s+KEY\s+LIMIT\s+RATE\s+ACTIVE\s+QUEUED/)
      expect(stdout).toMatch(/workflow:gated\s+a\s+1\s+-\s+1\s+2/)
    } finally {
      await server.close()
    }
  })
})
