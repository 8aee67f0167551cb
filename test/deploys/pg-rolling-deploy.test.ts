// Real host processes on one Postgres schema, deployed the way docs/deploys.md says: a rolling
// deploy from `order@v1` to `order@v2` behind a round-robin balancer while a client keeps
// starting and signalling runs, and a v1 run stranded by the death of its only capable host,
// finished by a v1 host started later. Prints SCORE lines.
import { setTimeout as sleep } from 'node:timers/promises'
import { afterAll, afterEach, describe, expect, it } from 'vitest'
import { type Host, startCallCounter, startHost, stopHosts } from '../hosts/pg-hosts.js'
import { until } from '../support/ownership-cluster.js'
import { postgresAvailable, testSchemas } from '../support/postgres.js'

/** Short leases: a killed host's advertisement lapses in a second and a half. */
const ENGINE = { ownership: { leaseMs: 1500, pollMs: 50 } }
const OLD_RUNS = 100
const paid = { events: [{ type: 'ord.paid', payload: {} }] }

if (postgresAvailable('pg-rolling-deploy')) {
  const schemas = testSchemas('rolling')
  const hosts: Host[] = []
  let counter: Awaited<ReturnType<typeof startCallCounter>> | undefined
  const boot = async (name: string, schema: string, versions: string) => {
    counter ??= await startCallCounter(0)
    const host = await startHost(name, schema, counter.url, ENGINE, { PG_HOST_ORDER: versions })
    hosts.push(host)
    return host
  }
  // A try's hosts end with it (a retry must not share the machine with the first try's).
  afterEach(() => stopHosts(hosts.splice(0)))
  afterAll(async () => {
    await counter?.close()
  })

  /** A round-robin balancer: hosts leave the rotation (drained) before they stop. */
  function balancer(initial: Host[]) {
    const rotation = [...initial]
    const inflight = new Map<Host, number>()
    const failures: string[] = []
    let next = 0
    let requests = 0
    async function send(method: string, path: string, body?: unknown) {
      const host = rotation[next++ % rotation.length]
      inflight.set(host, (inflight.get(host) ?? 0) + 1)
      requests++
      try {
        const res = await fetch(`${host.url}${path}`, {
          method,
          headers: body === undefined ? {} : { 'content-type': 'application/json' },
          body: body === undefined ? undefined : JSON.stringify(body),
        })
        const text = await res.text()
        if (!res.ok) failures.push(`${host.name} ${method} ${path}: ${res.status} ${text}`)
        return { ok: res.ok, host: host.name, body: text ? JSON.parse(text) : null }
      } catch (error) {
        failures.push(`${host.name} ${method} ${path}: ${String(error)}`)
        return { ok: false, host: host.name, body: null }
      } finally {
        inflight.set(host, (inflight.get(host) ?? 1) - 1)
      }
    }
    return {
      send,
      failures,
      requests: () => requests,
      /** Out of the rotation, then stopped once its requests are answered. */
      async retire(host: Host) {
        rotation.splice(rotation.indexOf(host), 1)
        await until(`${host.name} drained`, () => (inflight.get(host) ?? 0) === 0)
        host.child.kill('SIGTERM')
        await host.exited
      },
      add(host: Host) {
        rotation.push(host)
      },
    }
  }

  const get = async (host: Host, path: string) => (await fetch(`${host.url}${path}`)).json()
  const v1Active = async (host: Host) => {
    const report = await get(host, '/definitions/versions')
    const v1 = report.versions.find((v: any) => v.name === 'order' && v.version === 'v1')
    return (v1?.activeRuns as number | undefined) ?? 0
  }

  describe('deploying order@v2 over order@v1 on Postgres, real processes', () => {
    it('rolls hosts from v1 to v2 while a client keeps calling: no failed request, no failed run', {
      timeout: 150_000,
    }, async () => {
      const began = Date.now()
      const schema = schemas.next()
      const a = await boot('A', schema, 'v1')
      const b = await boot('B', schema, 'v1')
      const lb = balancer([a, b])
      const start = (runId: string, input: unknown) =>
        lb.send('POST', '/runs', { kind: 'workflow', definitionName: 'order', runId, input })

      // 100 runs parked on v1: half on a signal, half on a timer that fires mid-deploy or after.
      const signalled: string[] = []
      await Promise.all(
        Array.from({ length: OLD_RUNS }, async (_, i) => {
          const timer = i % 2 === 1
          const runId = `old-${timer ? 't' : 's'}-${i}`
          await start(runId, timer ? { timerMs: 6000 + (i % 10) * 1000 } : {})
          if (!timer) signalled.push(runId)
        }),
      )
      const drift = [await v1Active(a)]
      expect(drift[0]).toBe(OLD_RUNS)

      // The client: starts a run, signals an old one, round robin, the whole deploy long.
      const started: Array<{ runId: string; version: string; phase: number }> = []
      let phase = 0
      let stop = false
      let n = 0
      const client = (async () => {
        while (!stop || signalled.length > 0) {
          if (!stop) {
            const runId = `new-${++n}`
            const reply = await start(runId, {})
            if (reply.ok) {
              started.push({ runId, version: reply.body.state.definitionVersion, phase })
              signalled.push(runId)
            }
          }
          const old = signalled.shift()
          if (old) await lb.send('POST', `/runs/${old}/events`, paid)
          await sleep(15)
        }
      })()

      await sleep(1000)
      // Rollout 1: B gets v1 + v2 (v2 the default).
      await lb.retire(b)
      const b2 = await boot('B2', schema, 'v1,v2')
      lb.add(b2)
      phase = 1
      await sleep(1000)
      // Rollout 2: A gets v2 only; B2 is the one host left that executes v1.
      await lb.retire(a)
      const a2 = await boot('A2', schema, 'v2')
      lb.add(a2)
      phase = 2
      await sleep(3000)
      stop = true
      await client

      await until(
        'the v1 runs to drain',
        async () => {
          const active = await v1Active(b2)
          if (active !== drift.at(-1)) drift.push(active)
          return active === 0
        },
        60_000,
      )
      // Rollout 3: v1 leaves B: nothing is left on it.
      await lb.retire(b2)
      const b3 = await boot('B3', schema, 'v2')
      const report = await get(b3, '/definitions/versions')
      expect(report.versions.some((v: any) => v.name === 'order' && v.version === 'v1')).toBe(false)

      // Every run, read from a v2-only host (the v1 ones too).
      const ids = [
        ...Array.from({ length: OLD_RUNS }, (_, i) => `old-${i % 2 ? 't' : 's'}-${i}`),
        ...started.map((s) => s.runId),
      ]
      const states = await Promise.all(
        ids.map(async (id) => (await get(b3, `/runs/${id}`)).state as any),
      )
      const failedRuns = states.filter((s) => s.status !== 'completed')
      const v1Runs = states.filter((s) => s.definitionVersion === 'v1')
      const v1OnV1 = v1Runs.filter((s) => s.output?.done?.version === 'v1')
      const v1OnB = v1Runs.filter((s) => String(s.output?.done?.host).startsWith('B'))
      const v2Defaults = started.filter((s) => s.phase === 2)
      const v2New = v2Defaults.filter((s) => s.version === 'v2')
      console.log(
        `SCORE rolling_deploy requests=${lb.requests()} failed_requests=${lb.failures.length} runs=${states.length} failed_runs=${failedRuns.length} v1_runs=${v1Runs.length} v1_completed_on_v1=${v1OnV1.length} v1_finished_on_B=${v1OnB.length} new_runs_after_rollout=${v2Defaults.length} of_them_v2=${v2New.length} drift_v1=${drift.join('->')} wall_s=${((Date.now() - began) / 1000).toFixed(1)}`,
      )
      expect(lb.failures).toEqual([])
      expect(failedRuns.map((s) => `${s.runId} ${s.status}`)).toEqual([])
      expect(v1OnV1.length).toBe(v1Runs.length)
      expect(v2New.length).toBe(v2Defaults.length)
      expect(v2Defaults.length).toBeGreaterThan(0)
      expect(drift[0]).toBe(OLD_RUNS)
      expect(drift.at(-1)).toBe(0)
    })

    it('shows a v1 run whose only v1 host died as stranded; a v1 host started later finishes it', {
      timeout: 90_000,
    }, async () => {
      const began = Date.now()
      const schema = schemas.next()
      const k = await boot('K', schema, 'v1')
      const v2Host = await boot('N', schema, 'v2')
      const post = (host: Host, path: string, body: unknown) =>
        fetch(`${host.url}${path}`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify(body),
        })
      const run = { kind: 'workflow', definitionName: 'order', runId: 'lonely', input: {} }
      expect((await post(k, '/runs', run)).status).toBe(200)
      k.child.kill('SIGKILL')
      await k.exited
      const killedAt = Date.now()

      // Input is taken on the v2 host, and the run shows as stranded once K's claims lapsed.
      const reply = await post(v2Host, '/runs/lonely/events', paid)
      expect(reply.status).toBe(200)
      expect((await reply.json()).state).toMatchObject({ executing: false })
      let state: any
      await until('the run to show as stranded', async () => {
        state = (await get(v2Host, '/runs/lonely')).state
        return state.stranded === true
      })
      const strandedAfterMs = Date.now() - killedAt
      expect(state).toMatchObject({ status: 'running', stranded: true, executing: false })
      const summaries = await get(v2Host, '/runs/summaries?definitionVersion=v1')
      expect(summaries.runs).toMatchObject([{ runId: 'lonely', stranded: true }])
      expect((await get(v2Host, '/definitions/versions')).strandedRuns).toBe(1)

      const revived = await boot('K2', schema, 'v1')
      await until('the stranded run to finish', async () => {
        state = (await get(v2Host, '/runs/lonely')).state
        return state.status !== 'running'
      })
      console.log(
        `SCORE stranded status_while_stranded=running visible_after_kill_ms=${strandedAfterMs} finished=${state.status} by=${state.output?.done?.host}@${state.output?.done?.version} wall_s=${((Date.now() - began) / 1000).toFixed(1)}`,
      )
      expect(state).toMatchObject({
        status: 'completed',
        output: { done: { version: 'v1', host: revived.name } },
      })
      expect((await get(v2Host, '/definitions/versions')).strandedRuns).toBe(0)
    })
  })
}
