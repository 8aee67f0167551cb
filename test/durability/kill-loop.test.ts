import { spawn } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { afterAll, describe, expect, it } from 'vitest'
import { childWithin } from '../support/children.js'
import { postgresAvailable, testSchemas } from '../support/postgres.js'
import { readAcks } from './ack-store.js'
import { killModules, NODES } from './kill-workload.js'
import { checkCompletion, checkLogs } from './log-checks.js'
import { openStoreSpec } from './store-spec.js'

const SOAK = process.env.SKEIN_SOAK === '1'
const SQLITE_CYCLES = Number(process.env.SKEIN_KILL_CYCLES ?? (SOAK ? 1000 : 100))
/** Fewer on Postgres by default: its child boots slower (a pool, a migration check). */
const PG_CYCLES = Number(process.env.SKEIN_PG_KILL_CYCLES ?? (SOAK ? 300 : 30))
// SKEIN_KILL_POLL_MS, read by the child from the inherited environment: how often it claims due
// runs (ownership.pollMs); a few ms makes the claim tick race the child's own passes often.
/** Real time the child works after it is ready, before the kill (uniform in [0, MAX)). */
const MAX_WORK_MS = 400
/**
 * A cycle (spawn, boot, work, check every log so far) took ~1.1 s here over 300 cycles and
 * ~2.4 s on average over 1,000 (the check grows with the logs): the limit grows with the
 * cycles, so a soak is not cut off by a limit sized for CI's 100.
 */
const timeoutFor = (cycles: number) => Math.max(600_000, cycles * 4_000 + 120_000)

const dir = mkdtempSync(join(tmpdir(), 'skein-kill-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

const child = join(import.meta.dirname, 'kill-child.ts')

/**
 * The loop on one store (`freshSpec()` names a new one for each try, see store-spec.ts: a
 * retried test must not find the first try's runs and acks): the child works on it and is
 * killed, again and again; every log is checked after each kill.
 */
function killLoop(freshSpec: () => string, cycles: number) {
  const totalRuns = cycles * 3

  /** Spawns the child; `ready` resolves when its engine booted, `exit` with its exit code. */
  function spawnChild(storeSpec: string, acksPath: string, mode: 'work' | 'drain') {
    const proc = spawn(
      process.execPath,
      [
        '--conditions=skein-source',
        '--import',
        'tsx',
        child,
        storeSpec,
        acksPath,
        mode,
        String(totalRuns),
      ],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    )
    let out = ''
    let err = ''
    proc.stderr.on('data', (d) => (err += d))
    const exit = new Promise<number | null>((resolve) => proc.on('exit', (code) => resolve(code)))
    const ready = new Promise<boolean>((resolve) => {
      proc.stdout.on('data', (d) => {
        out += d
        if (out.includes('ready\n')) resolve(true)
      })
      void exit.then(() => resolve(false))
    })
    return { name: `the ${mode} child`, proc, ready, exit, output: () => ({ out, err }) }
  }

  async function check(storeSpec: string, acksPath: string) {
    const store = openStoreSpec(storeSpec)
    try {
      return await checkLogs(store, killModules(), readAcks(acksPath))
    } finally {
      await store.close?.()
    }
  }

  it(
    `survives ${cycles} SIGKILLs at random moments with no lost ack and no duplicate`,
    async () => {
      const storeSpec = freshSpec()
      const acksPath = join(dir, `acks-${storeSpec.replace(/\W/g, '_')}.log`)
      let lost = 0
      let dup = 0
      let killedAfterReady = 0
      let stalled = 0
      let completedBeforeDrain = 0
      for (let cycle = 1; cycle <= cycles; cycle++) {
        const c = spawnChild(storeSpec, acksPath, 'work')
        const watched = { ...c, output: () => `${c.output().out}\n${c.output().err}` }
        // One kill in five lands during boot and recovery, the rest while the workload runs.
        const duringBoot = Math.random() < 0.2
        if (duringBoot) await sleep(100 + Math.random() * 400)
        else if (await childWithin(`cycle ${cycle}: the child ready`, watched, c.ready, 60_000)) {
          killedAfterReady++
          await sleep(Math.random() * MAX_WORK_MS)
        }
        c.proc.kill('SIGKILL')
        const code = await c.exit
        stalled += c
          .output()
          .out.split('\n')
          .filter((l) => l.startsWith('stalled ')).length
        if (code !== null && code !== 0) throw new Error(`child failed: ${c.output().err}`)
        const report = await check(storeSpec, acksPath)
        lost += report.lost
        dup += report.dup
        expect(report.problems, `after kill ${cycle}`).toEqual([])
        completedBeforeDrain = [...report.logs.values()].filter(
          (log) => log.at(-1)?.type === 'runtime.run.completed',
        ).length
      }
      // Let the last child run to the end: every run completes, each step recorded once.
      const last = spawnChild(storeSpec, acksPath, 'drain')
      const timeout = setTimeout(() => last.proc.kill('SIGKILL'), 90_000)
      const code = await last.exit
      clearTimeout(timeout)
      expect(code, last.output().err).toBe(0)
      const final = await check(storeSpec, acksPath)
      expect(final.problems).toEqual([])
      const done = checkCompletion(final.logs, NODES)
      expect(done.problems).toEqual([])
      expect(final.runs).toBe(totalRuns)
      lost += final.lost
      dup += final.dup + done.dup
      stalled += last
        .output()
        .out.split('\n')
        .filter((l) => l.startsWith('stalled ')).length
      console.log(
        `SCORE crash_cycles=${cycles} store=${storeSpec.split(':')[0]} lost=${lost} dup=${dup} runs=${final.runs} events=${final.events} acks=${readAcks(acksPath).length} killed_while_working=${killedAfterReady} completed_before_drain=${completedBeforeDrain} stalled_runs_woken=${stalled}`,
      )
      expect(lost).toBe(0)
      expect(dup).toBe(0)
    },
    timeoutFor(cycles),
  )
}

describe('kill loop on SQLite', () => {
  let tries = 0
  killLoop(() => `sqlite:${join(dir, `runs-${++tries}.db`)}`, SQLITE_CYCLES)
})

describe('kill loop on Postgres', () => {
  if (postgresAvailable('kill-loop')) {
    const schemas = testSchemas('kill')
    killLoop(() => `postgres:${schemas.next()}`, PG_CYCLES)
  }
})
