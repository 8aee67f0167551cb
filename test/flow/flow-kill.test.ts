// kill -9 inside flow control's windows (real child processes of flow-host-child.ts on one
// store): a debounce window whose process dies still ends on time, on its last input, once; a
// rate window whose admitting process dies admits no run twice and never more than its limit.
// 2 processes on one SQLite file, 3 hosts on one Postgres schema. SCORE lines print the
// figures; nothing timed is asserted.
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import type { EventStore } from 'skein'
import { describe, expect, it } from 'vitest'
import { postgresAvailable, testSchemas } from '../support/postgres.js'
import {
  clusterFixture,
  eventsOf,
  type FlowHost,
  maxInWindow,
  request,
  startOn,
  until,
} from './flow-hosts.js'

const fresh = clusterFixture()

async function completedRuns(store: EventStore, definitionName: string) {
  const page = await store.listSummaries!({ definitionName, limit: 1000 })
  return page.runs.filter((r) => r.status === 'completed').map((r) => r.runId)
}

function killProofs(name: string, spec: (dir: string) => string, count: number) {
  it(`${name}: kill -9 inside a debounce window: one run per key, on the last input, run once`, async () => {
    const { cluster, reader } = fresh(spec)
    const hosts: FlowHost[] = []
    for (let i = 0; i < count; i++)
      hosts.push(await cluster.spawnHost(`h${i}`, { debounceMs: 3000 }))
    const [victim] = hosts
    // 'alone': every start on the victim, killed inside the window: only the store knows it.
    const alone: string[] = []
    for (let n = 0; n < 20; n++) {
      alone.push((await startOn(victim, 'debounced', { k: 'alone', n })).runId)
    }
    const lastAloneAt = Date.now()
    // 'shared': starts over every process; the victim is killed after the 10th.
    const shared: string[] = []
    let killedAt = 0
    for (let n = 0; n < 30; n++) {
      if (n === 10) killedAt = await cluster.kill(victim)
      const live = hosts.filter((h) => h.alive)
      shared.push((await startOn(live[n % live.length], 'debounced', { k: 'shared', n })).runId)
    }
    const store = reader()
    await until('both windows to end and their runs to complete', async () => {
      return (await completedRuns(store, 'debounced')).length >= 2
    })
    await sleep(2000) // a moment for a second run or execution, had there been one
    const runs = await completedRuns(store, 'debounced')
    const survivor = hosts[1]
    const outputOf = async (runId: string) =>
      (await request(survivor, `/runs/${runId}`)).state.output?.n
    const starts = (key: string) =>
      cluster.edges().filter((e) => e.key === key && e.edge === 'start')
    console.log(
      `SCORE flow-kill-debounce-${name} processes=${count} killed_inside_window=${killedAt < lastAloneAt + 3000} alone_ids=${new Set(alone).size} shared_ids=${new Set(shared).size} runs=${runs.length} alone_executions=${starts('alone').length} shared_executions=${starts('shared').length} alone_ran_on=${starts('alone')[0]?.host}`,
    )
    expect(new Set(alone).size).toBe(1)
    expect(new Set(shared).size).toBe(1)
    expect(runs.sort()).toEqual([alone[0], shared[0]].sort())
    expect(await outputOf(alone[0])).toEqual({ k: 'alone', n: 19 })
    expect(await outputOf(shared[0])).toEqual({ k: 'shared', n: 29 })
    expect(starts('alone')).toHaveLength(1)
    expect(starts('shared')).toHaveLength(1)
    expect(starts('alone')[0].host).not.toBe(victim.name)
  }, 240_000)

  it(`${name}: kill -9 inside a rate window: every run admitted once and completed, never more than the limit in any second`, async () => {
    const { cluster, reader } = fresh(spec)
    const limit = 10
    const hosts: FlowHost[] = []
    for (let i = 0; i < count; i++)
      hosts.push(await cluster.spawnHost(`h${i}`, { rateLimit: limit }))
    const victim = hosts[0]
    const total = 60
    const ids = Array.from({ length: total }, (_, i) => `rated-${i}`)
    const due = Date.now() + 8000
    for (let from = 0; from < total; from += 12) {
      await Promise.all(
        ids
          .slice(from, from + 12)
          .map((runId, j) =>
            startOn(
              hosts[(from + j) % count],
              'rated',
              { k: 'r', n: from + j },
              { runId, startAt: due },
            ),
          ),
      )
    }
    expect(Date.now()).toBeLessThan(due)
    // Killed inside the second window, while admissions go on.
    await sleep(due + 1300 - Date.now())
    const killedAt = await cluster.kill(victim)
    const store = reader()
    await until('every rated run to complete', async () => {
      return (await completedRuns(store, 'rated')).length === total
    })
    await sleep(1500)
    const survivor = hosts[1]
    const admittedAt: number[] = []
    let admittedTwice = 0
    let startedTwice = 0
    for (const runId of ids) {
      const log = await eventsOf(survivor, runId)
      const admissions = log.filter((e) => e.type === 'runtime.run.admitted')
      const roots = log.filter(
        (e) => e.type === 'runtime.thread.started' && !e.payload?.parentThreadId,
      )
      if (admissions.length !== 1) admittedTwice++
      if (roots.length !== 1) startedTwice++
      admittedAt.push(admissions[0].payload.admittedAt)
    }
    // A handler may run again only when the kill cut it short (at-least-once effects).
    const starts = cluster.edges().filter((e) => e.runId.startsWith('rated-') && e.edge === 'start')
    const byRun = new Map<string, typeof starts>()
    for (const e of starts) byRun.set(e.runId, [...(byRun.get(e.runId) ?? []), e])
    const reruns = [...byRun.values()].filter((s) => s.length > 1)
    const rerunsNotKilled = reruns.filter((s) => s[0].pid !== victim.proc.pid)
    const worst = maxInWindow(admittedAt, 1000)
    console.log(
      `SCORE flow-kill-rate-${name} processes=${count} limit=${limit}/1000ms runs=${total} killed_after_due_ms=${killedAt - due} max_admitted_in_any_1s=${worst} admitted_twice=${admittedTwice} root_started_twice=${startedTwice} handler_reruns=${reruns.length} reruns_not_cut_by_kill=${rerunsNotKilled.length} runs_executed=${byRun.size}`,
    )
    expect(worst).toBeLessThanOrEqual(limit)
    expect(admittedTwice).toBe(0)
    expect(startedTwice).toBe(0)
    expect(byRun.size).toBe(total)
    expect(rerunsNotKilled).toHaveLength(0)
  }, 240_000)
}

describe('kill -9 inside flow-control windows, 2 processes on one SQLite file', () => {
  killProofs('sqlite-2p', (dir) => `sqlite:${join(dir, 'runs.db')}`, 2)
})

if (postgresAvailable('flow-kill')) {
  const schemas = testSchemas('flow_kill')
  describe('kill -9 inside flow-control windows, 3 hosts on one Postgres schema', () => {
    killProofs('pg-3h', () => `postgres:${schemas.next()}`, 3)
  })
}
