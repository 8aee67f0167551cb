// Worker tasks kept in the store are encoded with the engine's payload codec
// (docs/data-lifecycle.md, "Payloads encrypted at rest"): the SQLite file holds no task input in
// clear while the task waits, and a worker claiming it over HTTP gets the input decoded.
import { randomBytes } from 'node:crypto'
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import {
  aesGcmCodec,
  bearerAuth,
  createEngine,
  defineEffect,
  defineModule,
  httpWorkerQueue,
} from 'skein'
import { sqliteStore } from 'skein/sqlite'
import { defineWorkflow, workflow } from 'skein/workflow'
import { afterAll, describe, expect, it } from 'vitest'
import { freshPath } from '../support/temp-dirs.js'

const TOKEN = 'worker-token-codec-0123456789'
const MARKER = 'tax-id-99-1234567-SECRET'
const dir = mkdtempSync(join(tmpdir(), 'skein-task-codec-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

const remote = defineModule({
  namespace: 'remote',
  effects: { file: defineEffect({ execution: 'worker', retry: { maxAttempts: 1 } }) },
})
const filing = defineWorkflow({
  name: 'filing',
  nodes: { f: { run: (ctx) => ctx.invoke('remote.file', { taxId: MARKER }) } },
})

describe('worker tasks with a payload codec', () => {
  it('the stored task holds no plaintext; the claimed task has the decoded input', async () => {
    const path = freshPath(dir, 'runs.db')
    const engine = createEngine({
      store: sqliteStore({ path }),
      modules: [workflow({ definitions: [filing] }), remote],
      codec: aesGcmCodec({ keys: { k1: randomBytes(32) }, current: 'k1' }),
      worker: httpWorkerQueue({ pollMs: 50 }),
      authorize: bearerAuth({ worker: TOKEN }),
    })
    try {
      await engine.start(filing, undefined, { runId: 'task-secret' })
      await (await engine.runtime).idle()
      const stored = await (await engine.store).workerTasks!.list()
      expect(stored.map((s) => s.task.input)).toEqual([{ taxId: MARKER }])
      const raw = [path, `${path}-wal`]
        .filter((f) => existsSync(f))
        .map((f) => readFileSync(f).toString('latin1'))
        .join('')
      expect(raw).toContain('task-secret')
      expect(raw.includes(MARKER)).toBe(false)

      const server = await engine.serve({ port: 0 })
      try {
        const res = await fetch(`${server.url}/workers/tasks/claim`, {
          method: 'POST',
          headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
          body: JSON.stringify({ types: ['remote.file'], max: 10 }),
        })
        expect(res.status).toBe(200)
        const { tasks } = await res.json()
        expect(tasks).toHaveLength(1)
        expect(tasks[0]).toMatchObject({ runId: 'task-secret', input: { taxId: MARKER } })
      } finally {
        await server.close()
      }
    } finally {
      await engine.stop()
    }
  })
})
