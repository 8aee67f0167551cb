// Migrating runs over real processes on one store (docs/deploys.md, "Migrating runs"): a host
// with v1 and v2 parks 20 v1 runs, refuses a move to an incompatible v3 with the differences
// and nothing written, moves the 20 to v2 over HTTP; it is stopped and a host with v2 only
// finishes every run on v2; replay of a migrated run reproduces its state. Figures are SCORE
// lines, never asserted as timings.
import { type ChildProcess, spawn } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { endChildren, exitWithin, waitFor } from '../support/children.js'
import { postgresAvailable, testSchemas } from '../support/postgres.js'

const CHILD = join(import.meta.dirname, 'migrate-host-child.ts')
const children: ChildProcess[] = []
const dirs: string[] = []
afterEach(async () => {
  await endChildren(children)
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true })
})

/** A host process registering `versions`; resolves with its url once it listens. */
async function spawnHost(storeSpec: string, versions: string[]) {
  const child = spawn(
    process.execPath,
    ['--conditions=skein-source', '--import', 'tsx', CHILD, storeSpec, JSON.stringify(versions)],
    { stdio: ['ignore', 'pipe', 'pipe'], env: process.env },
  )
  children.push(child)
  let out = ''
  let err = ''
  child.stdout?.on('data', (d) => (out += d))
  child.stderr?.on('data', (d) => (err += d))
  const host = {
    name: `the ${versions.join('+')} host`,
    proc: child,
    output: () => `${out}\n${err}`,
  }
  await waitFor(`${host.name} to listen`, () => /port \d+/.test(out), { children: [host] })
  const url = `http://127.0.0.1:${/port (\d+)/.exec(out)?.[1]}`
  const call = async (method: string, path: string, body?: unknown) => {
    const res = await fetch(url + path, {
      method,
      headers: body === undefined ? {} : { 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    })
    return { status: res.status, body: (await res.json()) as any }
  }
  const stop = async () => {
    child.kill('SIGTERM')
    await exitWithin(host, 30_000)
  }
  return { call, stop }
}

const stores: Array<[string, () => string]> = [
  [
    'sqlite',
    () => `sqlite:${join(mkdtempSync(join(tmpdir(), 'skein-migrate-hosts-')), 'runs.db')}`,
  ],
]
if (postgresAvailable('deploy-migrate-hosts')) {
  const schemas = testSchemas('deploy-migrate-hosts')
  stores.push(['postgres', () => `postgres:${schemas.next()}`])
}

describe.each(stores)('migrating runs across processes on %s', (name, spec) => {
  it('moves 20 parked v1 runs to v2, refuses v3 with the diff, and a v2-only host finishes them', {
    timeout: 180_000,
  }, async () => {
    const storeSpec = spec()
    if (storeSpec.startsWith('sqlite:')) dirs.push(join(storeSpec.slice(7), '..'))
    const oldHost = await spawnHost(storeSpec, ['v1', 'v2', 'v3'])
    const runIds = Array.from({ length: 20 }, (_, i) => `order-${i}`)
    for (const runId of runIds) {
      const started = await oldHost.call('POST', '/runs', {
        kind: 'workflow',
        definitionName: 'order',
        definitionVersion: 'v1',
        runId,
      })
      expect(started.status).toBe(200)
    }
    const tailOf = async (runId: string) =>
      (await oldHost.call('GET', `/runs/${runId}/events`)).body.events.length

    // Incompatible: refused with what differs, nothing written.
    const before = await tailOf('order-0')
    const refused = await oldHost.call('POST', '/runs/order-0/migrate', { toVersion: 'v3' })
    expect(refused.status).toBe(409)
    expect(refused.body.error).toMatchObject({
      code: 'MIGRATION_REFUSED',
      details: {
        fromVersion: 'v1',
        toVersion: 'v3',
        differences: [{ path: 'nodes.paid.after', current: [], target: ['check'] }],
      },
    })
    const written = (await tailOf('order-0')) - before

    const filter = { definitionName: 'order', definitionVersion: 'v1' }
    const dry = await oldHost.call('POST', '/operations/runs/migrate', {
      filter,
      toVersion: 'v2',
      dryRun: true,
    })
    expect(dry.body).toMatchObject({ action: 'migrate', dryRun: true, matched: 20, refused: [] })
    const moveStarted = Date.now()
    const moved = await oldHost.call('POST', '/operations/runs/migrate', {
      filter,
      toVersion: 'v2',
    })
    const migrateMs = Date.now() - moveStarted
    expect(moved.body).toMatchObject({ matched: 20, refused: [] })
    expect(moved.body.done).toHaveLength(20)
    const drift = (await oldHost.call('GET', '/definitions/versions')).body
    const onV1 = drift.versions.find((v: any) => v.version === 'v1')?.activeRuns
    await oldHost.stop()

    // The fleet runs v2 only now.
    const newHost = await spawnHost(storeSpec, ['v2'])
    for (const runId of runIds) {
      const signalled = await newHost.call('POST', `/runs/${runId}/events`, {
        events: [{ type: 'shop.paid', payload: {} }],
      })
      expect(signalled.status).toBe(200)
    }
    const outputs = []
    for (const runId of runIds) {
      const { body } = await newHost.call('GET', `/runs/${runId}?wait=terminal&timeoutMs=30000`)
      expect(body.state).toMatchObject({ status: 'completed', definitionVersion: 'v2' })
      outputs.push(body.state.output)
    }
    const onV2 = outputs.filter((o) => o?.ship?.shippedBy === 'v2').length
    expect(onV2).toBe(20)

    // Replay of a migrated run reproduces its state.
    const { state } = (await newHost.call('GET', '/runs/order-7')).body
    const replayed = (await newHost.call('GET', `/runs/order-7/replay?seq=${state.lastSeq}`)).body
    const same = JSON.stringify(replayed.step.after) === JSON.stringify(state)
    expect(replayed.step.after).toEqual(state)
    console.log(
      `SCORE migrate-hosts-${name} runs=20 refused_incompatible=${refused.status === 409 ? 1 : 0} written_on_refusal=${written} dry_run_matched=${dry.body.matched} migrated=${moved.body.done.length} v1_active_after=${onV1} completed_on_v2_only_host=${onV2} replay_equal=${same ? 1 : 0} migrate_20_ms=${migrateMs}`,
    )
    expect(written).toBe(0)
    expect(onV1).toBe(0)
    await newHost.stop()
  })
})
