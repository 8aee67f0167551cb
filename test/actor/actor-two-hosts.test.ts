import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { cellFileName } from 'skein/actor'
import { sqliteStore } from 'skein/sqlite'
import { afterAll, afterEach, describe, expect, it } from 'vitest'
import { type ActorChild, pool, spawnActorHost } from './child-process.js'

// Two actor host processes on one directory never run one cell twice: an open cell holds its
// file's lock, the other process waits briefly for it, then answers 503 LEASE_LOST.

const dirs: string[] = []
const children: ActorChild[] = []
// A try's processes end with it (a retry must not share the machine with the first try's).
afterEach(async () => {
  for (const c of children.splice(0)) await c.kill('SIGKILL')
})
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true })
})
const tempDir = () => {
  const dir = mkdtempSync(join(tmpdir(), 'skein-actor-two-'))
  dirs.push(dir)
  return dir
}
const host = (dir: string, idleMs: number, lockWaitMs: number) => {
  const child = spawnActorHost(dir, idleMs, lockWaitMs)
  children.push(child)
  return child
}

async function send(url: string, method: string, path: string, body?: unknown) {
  const init: RequestInit = { method }
  if (body !== undefined) {
    init.body = JSON.stringify(body)
    init.headers = { 'content-type': 'application/json' }
  }
  const res = await fetch(url + path, init)
  return { status: res.status, body: (await res.json()) as any }
}

const startNap = (url: string, runId: string) =>
  send(url, 'POST', '/runs', {
    kind: 'workflow',
    definitionName: 'nap',
    runId,
    input: { ms: 3_600_000 },
  })

describe('actor host: two processes on one directory (real processes)', () => {
  it('the second process gets 503 LEASE_LOST while the first holds the cell, then takes it over', async () => {
    const dir = tempDir()
    const a = host(dir, 600_000, 300)
    const b = host(dir, 600_000, 300)
    const [urlA, urlB] = await Promise.all([a.url, b.url])
    expect((await startNap(urlA, 'held')).status).toBe(200)
    const refused = await send(urlB, 'GET', '/runs/held')
    expect(refused.status).toBe(503)
    expect(refused.body.error.code).toBe('LEASE_LOST')
    expect(refused.body.error.message).toMatch(/another actor host process/)
    const signal = await send(urlB, 'POST', '/runs/held/events', {
      events: [{ type: 'test.poke' }],
    })
    expect(signal.status).toBe(503)
    // A stops (its cells close): B opens the cell and sees what A wrote, and nothing from B.
    expect(await a.kill('SIGTERM')).toBe(0)
    const taken = await send(urlB, 'GET', '/runs/held/events')
    expect(taken.status).toBe(200)
    expect(taken.body.events.some((e: any) => e.type === 'test.poke')).toBe(false)
    await b.kill('SIGTERM')
  }, 120_000)

  it('under interleaved requests to both, each signal is applied once or refused, never twice', async () => {
    const dir = tempDir()
    // Short idle time: cells move between the processes all the time.
    const a = host(dir, 150, 100)
    const b = host(dir, 150, 100)
    const urls = await Promise.all([a.url, b.url])
    const runIds = Array.from({ length: 8 }, (_, i) => `mix-${i}`)
    for (const runId of runIds) expect((await startNap(urls[0] as string, runId)).status).toBe(200)
    const sends: Array<{ runId: string; n: number; via: number }> = []
    for (let n = 0; n < 30; n++) {
      for (const runId of runIds) sends.push({ runId, n, via: Math.random() < 0.5 ? 0 : 1 })
    }
    const applied = new Map<string, Set<number>>(runIds.map((id) => [id, new Set<number>()]))
    const served = [0, 0]
    let refused = 0
    await pool(sends, 6, async ({ runId, n, via }) => {
      if (Math.random() < 0.3) await sleep(Math.random() * 300)
      const res = await send(urls[via] as string, 'POST', `/runs/${runId}/events`, {
        events: [{ type: 'test.poke', payload: { n } }],
        idempotencyKey: `poke-${n}`,
      })
      if (res.status === 200) {
        applied.get(runId)?.add(n)
        served[via] = (served[via] ?? 0) + 1
      } else {
        expect(res.status, JSON.stringify(res.body)).toBe(503)
        expect(res.body.error.code).toBe('LEASE_LOST')
        refused++
      }
    })
    expect(await a.kill('SIGTERM')).toBe(0)
    expect(await b.kill('SIGTERM')).toBe(0)

    let mismatched = 0
    let gaps = 0
    for (const runId of runIds) {
      const store = sqliteStore({ path: join(dir, 'runs', cellFileName(runId)) })
      try {
        const events = await store.read(runId)
        events.forEach((e, i) => {
          if (e.seq !== i + 1) gaps++
        })
        const pokes = events
          .filter((e) => e.type === 'test.poke')
          .map((e) => (e.payload as { n: number }).n)
        const expected = [...(applied.get(runId) ?? [])].sort((x, y) => x - y)
        if (JSON.stringify([...pokes].sort((x, y) => x - y)) !== JSON.stringify(expected)) {
          mismatched++
        }
      } finally {
        await store.close()
      }
    }
    console.log(
      `SCORE actor-two-hosts signals=${sends.length} applied_a=${served[0]} applied_b=${served[1]} refused_503=${refused} logs_mismatched=${mismatched} seq_gaps=${gaps}`,
    )
    expect({ mismatched, gaps }).toEqual({ mismatched: 0, gaps: 0 })
    // Both processes ran cells (at different times), and none twice at once.
    expect(served[0]).toBeGreaterThan(0)
    expect(served[1]).toBeGreaterThan(0)
  }, 300_000)
})
