import { randomBytes } from 'node:crypto'
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { aesGcmCodec } from 'skein'
import { createActorHost } from 'skein/actor'
import { defineWorkflow, workflow } from 'skein/workflow'
import { afterAll, describe, expect, it } from 'vitest'

// An actor host whose cells encode payloads (docs/data-lifecycle.md, "Payloads encrypted at
// rest"): `cell: { codec }` reaches every cell's engine, so no cell file (nor the registry) holds
// the plaintext, and reads over HTTP are decoded.

const MARKER = 'passport-X1234567-SECRET'
const dir = mkdtempSync(join(tmpdir(), 'skein-actor-codec-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

const parked = defineWorkflow({
  name: 'parked',
  nodes: { w: { run: (ctx) => ctx.waitFor('app.note') } },
})

describe('actor host with a payload codec', () => {
  it('reads decoded over HTTP; no file under the host dir holds the plaintext', async () => {
    const codec = aesGcmCodec({ keys: { k1: randomBytes(32) }, current: 'k1' })
    const host = createActorHost({
      modules: [workflow({ definitions: [parked] })],
      dir,
      cell: { codec },
      authorize: () => true,
    })
    const call = async (method: string, path: string, body?: unknown) => {
      const res = await host.fetch(
        new Request(`http://actor.test${path}`, {
          method,
          headers: body === undefined ? {} : { 'content-type': 'application/json' },
          body: body === undefined ? undefined : JSON.stringify(body),
        }),
      )
      if (!res) throw new Error(`${method} ${path}: not answered`)
      return { status: res.status, text: await res.text() }
    }
    try {
      const started = await call('POST', '/runs', {
        kind: 'workflow',
        definitionName: 'parked',
        runId: 'cell-secret',
        input: { passport: MARKER },
      })
      expect(started.status).toBe(200)
      const signalled = await call('POST', '/runs/cell-secret/events', {
        events: [{ type: 'app.note', payload: { note: MARKER } }],
      })
      expect(signalled.status).toBe(200)
      const events = await call('GET', '/runs/cell-secret/events')
      expect(events.status).toBe(200)
      expect(events.text).toContain(MARKER)
    } finally {
      await host.stop()
    }
    const files = readdirSync(dir, { recursive: true, withFileTypes: true })
      .filter((d) => d.isFile())
      .map((d) => join(d.parentPath, d.name))
    expect(files.some((f) => f.includes('runs'))).toBe(true)
    const raw = files.map((f) => readFileSync(f).toString('latin1')).join('\n')
    expect(raw).toContain('cell-secret')
    expect(raw.includes(MARKER)).toBe(false)
  })
})
