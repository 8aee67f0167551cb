// A kill -9 loop during a 200-item fan-out and during compensation: a child process works on
// a SQLite file and is SIGKILLed again and again, then drains. Every item completes once (its
// attempts re-run only as the attempt policy says after a kill), and every saga compensates
// each node exactly once, in reverse order, with nothing skipped.
import { spawn } from 'node:child_process'
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import type { EventEnvelope } from 'skein'
import { createEngine } from 'skein'
import { sqliteStore } from 'skein/sqlite'
import { afterAll, expect, it } from 'vitest'
import { childWithin, exitWithin } from '../support/children.js'
import { fanOutModules, ITEMS, SAGAS } from './kill-fan-out-workload.js'

const CYCLES = Number(process.env.SKEIN_KILL_CYCLES ?? 12)
const dir = mkdtempSync(join(tmpdir(), 'skein-kill-fan-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))
const child = join(import.meta.dirname, 'kill-fan-out-child.ts')
// Each try on files of its own: a retried test must not find the first try's runs and calls.
let tries = 0

function spawnChild(db: string, callsPath: string, mode: 'work' | 'drain') {
  const proc = spawn(
    process.execPath,
    ['--conditions=skein-source', '--import', 'tsx', child, db, callsPath, mode],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  )
  let out = ''
  let err = ''
  proc.stderr.on('data', (d) => (err += d))
  const exit = new Promise<number | null>((resolve) => proc.on('exit', (code) => resolve(code)))
  const ready = new Promise<void>((resolve, reject) => {
    proc.stdout.on('data', (d) => {
      out += d
      if (out.includes('ready')) resolve()
    })
    void exit.then(() =>
      out.includes('ready')
        ? resolve()
        : reject(new Error(`the ${mode} child exited ${proc.exitCode ?? proc.signalCode}: ${err}`)),
    )
  })
  return {
    name: `the ${mode} child`,
    proc,
    ready,
    exit,
    output: () => `${out}\n${err}`,
    err: () => err,
  }
}

it(`a 200-item fan-out and compensating sagas survive ${CYCLES} kill -9s`, {
  timeout: 600_000,
}, async () => {
  const db = join(dir, `runs-${++tries}.db`)
  const callsPath = join(dir, `calls-${tries}.log`)
  for (let cycle = 0; cycle < CYCLES; cycle++) {
    const c = spawnChild(db, callsPath, 'work')
    await childWithin(`cycle ${cycle}: the work child ready`, c, c.ready, 60_000)
    await sleep(150 + Math.random() * 600)
    c.proc.kill('SIGKILL')
    await c.exit
  }
  const drain = spawnChild(db, callsPath, 'drain')
  const { code } = await exitWithin(drain, 240_000)
  expect(code, drain.err()).toBe(0)

  const engine = createEngine({ store: sqliteStore({ path: db }), modules: fanOutModules() })
  try {
    const events = async (runId: string): Promise<EventEnvelope[]> =>
      engine.getEvents(runId, { limit: 100_000 })
    const calls = existsSync(callsPath) ? readFileSync(callsPath, 'utf8').trim().split('\n') : []

    // The fan-out: completed, every item's result in input order, each item requested and
    // completed exactly once; an item ran again only as a new attempt of the same effect.
    const fan = await engine.getRun('fan')
    expect(fan.status).toBe('completed')
    expect(fan.output).toEqual(Array.from({ length: ITEMS }, (_, n) => n * 2))
    const fanLog = await events('fan')
    const requested = fanLog.filter((e) => e.type === 'runtime.effect.requested')
    const keys = requested.map((e) => (e.payload as { key: string }).key)
    expect(new Set(keys).size).toBe(ITEMS)
    expect(keys).toHaveLength(ITEMS)
    const completed = fanLog.filter((e) => e.type === 'runtime.effect.completed')
    expect(new Set(completed.map((e) => e.effectId)).size).toBe(ITEMS)
    expect(completed).toHaveLength(ITEMS)
    const itemRuns = calls.filter((l) => l.startsWith('item '))
    const byAttempt = new Set(itemRuns.map((l) => l.split(' ').slice(2).join(' ')))
    // At most one execution per (effect, attempt): no attempt ran twice.
    expect(byAttempt.size).toBe(itemRuns.length)
    const reruns = itemRuns.length - ITEMS
    const interrupted = fanLog.filter(
      (e) => e.type === 'runtime.effect.failed' && (e.payload as any).reason === 'interrupted',
    ).length
    expect(reruns).toBeLessThanOrEqual(interrupted)

    // The sagas: each failed with NODE_FAILED after compensating c, b, a exactly once each.
    let undoneAttempts = 0
    for (let i = 0; i < SAGAS; i++) {
      const runId = `saga-${i}`
      const run = await engine.getRun(runId)
      expect(run.status, runId).toBe('failed')
      expect(run.error?.code).toBe('NODE_FAILED')
      expect((run.error as any).details.compensated).toEqual(['c', 'b', 'a'])
      const log = await events(runId)
      const compensated = log
        .filter((e) => e.type === 'workflow.node.compensated')
        .map((e) => (e.payload as { nodeId: string }).nodeId)
      expect(compensated, runId).toEqual(['c', 'b', 'a'])
      const undoKeys = log
        .filter((e) => e.type === 'runtime.effect.requested')
        .map((e) => (e.payload as { key: string }).key)
        .filter((k) => k.startsWith('undo:'))
      expect(undoKeys, runId).toEqual(['undo:c', 'undo:b', 'undo:a'])
      expect(log.filter((e) => e.type === 'workflow.compensation.started')).toHaveLength(1)
      const undoCalls = calls.filter((l) => l.startsWith(`undo ${runId} `))
      // Every node was undone; a re-run only as a new attempt after a kill.
      for (const node of ['a', 'b', 'c']) {
        expect(
          undoCalls.some((l) => l.startsWith(`undo ${runId} ${node} `)),
          `${runId} ${node}`,
        ).toBe(true)
      }
      const attempts = new Set(undoCalls.map((l) => l.split(' ').slice(3).join(' ')))
      expect(attempts.size).toBe(undoCalls.length)
      undoneAttempts += undoCalls.length
    }
    const interruptedUndos = (
      await Promise.all(Array.from({ length: SAGAS }, (_, i) => events(`saga-${i}`)))
    )
      .flat()
      .filter(
        (e) => e.type === 'runtime.effect.failed' && (e.payload as any).reason === 'interrupted',
      ).length
    console.log(
      `SCORE kill-fan-out interrupted_items=${interrupted} interrupted_saga_attempts=${interruptedUndos} cycles=${CYCLES} items=${ITEMS} item_executions=${itemRuns.length} item_reruns=${reruns} sagas=${SAGAS} undo_executions=${undoneAttempts} undo_reruns=${undoneAttempts - SAGAS * 3}`,
    )
  } finally {
    await engine.stop()
  }
})
