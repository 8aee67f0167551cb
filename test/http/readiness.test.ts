import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createEngine } from 'skein'
import { sqliteStore } from 'skein/sqlite'
import { workflow } from 'skein/workflow'
import { afterAll, describe, expect, it } from 'vitest'
import { freshPath } from '../support/temp-dirs.js'

const dir = mkdtempSync(join(tmpdir(), 'skein-ready-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

describe('GET /health?ready=1: readiness reflects the store', () => {
  it('200 while the store answers, 503 STORE_UNAVAILABLE once it does not; /health stays 200', async () => {
    const store = sqliteStore({ path: freshPath(dir, 'ready.db') })
    const engine = createEngine({ store, modules: [workflow()] })
    const server = await engine.serve({ port: 0, hostname: '127.0.0.1' })
    const get = async (path: string) => {
      const res = await fetch(server.url + path)
      return { status: res.status, body: (await res.json()) as any }
    }
    try {
      expect(await get('/health?ready=1')).toEqual({ status: 200, body: { ok: true, ready: true } })
      expect((await get('/health?ready=yes')).status).toBe(400)

      await store.close() // the store is gone under a serving engine
      const down = await get('/health?ready=1')
      expect(down.status).toBe(503)
      expect(down.body).toMatchObject({
        ok: false,
        ready: false,
        error: { code: 'STORE_UNAVAILABLE' },
      })
      expect(JSON.stringify(down.body)).not.toContain(dir) // no driver text or file path
      expect(await get('/health')).toEqual({ status: 200, body: { ok: true } })
    } finally {
      await server.close()
      await engine.stop().catch(() => {})
    }
  })
})
