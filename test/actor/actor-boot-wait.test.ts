import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { type ActorHost, type CellStore, createActorHost, sqliteCells } from 'skein/actor'
import { afterAll, describe, expect, it } from 'vitest'
import { actorModules } from './actor-workload.js'

const dirs: string[] = []
const hosts: ActorHost[] = []
afterAll(async () => {
  for (const host of hosts) await host.stop()
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true })
})
const tempDir = () => {
  const dir = mkdtempSync(join(tmpdir(), 'skein-actor-boot-'))
  dirs.push(dir)
  return dir
}
const track = (host: ActorHost) => {
  hosts.push(host)
  return host
}

async function call(host: ActorHost, method: string, path: string, body?: unknown) {
  const init: RequestInit = { method }
  if (body !== undefined) {
    init.body = JSON.stringify(body)
    init.headers = { 'content-type': 'application/json' }
  }
  const res = await host.fetch(new Request(`http://actor.test${path}`, init))
  if (!res) throw new Error(`${method} ${path}: not answered`)
  return { status: res.status, body: (await res.json()) as any }
}

describe('actor host: requests during boot recovery', () => {
  it('a request joining the recovery open of a held cell still waits its own lockWaitMs', async () => {
    const dir = tempDir()
    const a = track(createActorHost({ modules: actorModules(), dir }))
    const started = await call(a, 'POST', '/runs', {
      kind: 'workflow',
      definitionName: 'nap',
      runId: 'held',
      input: { ms: 3_600_000 },
    })
    expect(started.status).toBe(200)

    // Host B boots on the same directory: its recovery opens 'held' (due: open in A) without
    // waiting. The cells hold that open back until the request below has joined it.
    const base = sqliteCells({ dir, lockWaitMs: 30_000 })
    let recoveryOpening!: () => void
    const opening = new Promise<void>((r) => (recoveryOpening = r))
    let letRecoveryOpen!: () => void
    const released = new Promise<void>((r) => (letRecoveryOpen = r))
    const cells: CellStore = {
      open: async (runId, create, options) => {
        if (options?.waitMs === 0) {
          recoveryOpening()
          await released
        }
        return base.open(runId, create, options)
      },
      discard: (runId) => base.discard(runId),
      close: () => base.close?.() ?? Promise.resolve(),
    }
    const b = track(createActorHost({ modules: actorModules(), dir, cells }))
    await opening
    let answered = false
    const pending = call(b, 'GET', '/runs/held').finally(() => (answered = true))
    await sleep(200) // the request reaches the cell table and joins the recovery's open
    letRecoveryOpen()
    expect(await b.recovered).toBe(0) // A holds the cell: recovery leaves it to A
    await sleep(100)
    expect(answered, 'the request was refused without waiting').toBe(false)
    await a.stop() // A closes the cell: B's waiting request gets it
    const got = await pending
    expect(got.status, JSON.stringify(got.body)).toBe(200)
    expect(got.body.state.status).toBe('running')
  }, 60_000)

  it('the listing routes check their query values before answering', async () => {
    const host = track(createActorHost({ modules: actorModules() }))
    const bad = await call(host, 'GET', '/runs/summaries?limit=abc')
    expect(bad.status, JSON.stringify(bad.body)).toBe(400)
    expect(bad.body.error.code).toBe('INVALID_REQUEST')
    const unknown = await call(host, 'GET', '/runs?nope=1')
    expect(unknown.status).toBe(400)
    const fine = await call(host, 'GET', '/runs/summaries?limit=5')
    expect(fine.status).toBe(200)
  })
})
