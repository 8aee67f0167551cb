// Recovery starts when the engine is created: a process killed with SIGKILL while an
// in-process effect ran and a timer was pending is resumed by a new process that only
// creates the engine (docs/durability.md, "Recovery").
import { type ChildProcess, spawn } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import type { EventEnvelope } from 'skein'
import { sqliteStore } from 'skein/sqlite'
import { afterAll, afterEach, expect, it } from 'vitest'
import { endChildren, waitFor } from '../support/children.js'

const dir = mkdtempSync(join(tmpdir(), 'skein-boot-'))
const children: ChildProcess[] = []
// A try's processes end with it, and each try has a file of its own (a retried test must not
// find the first try's runs, nor its second process still working on them).
afterEach(() => endChildren(children))
afterAll(() => rmSync(dir, { recursive: true, force: true }))
let tries = 0

function spawnChild(db: string, mode: 'first' | 'second') {
  const proc = spawn(
    process.execPath,
    [
      '--conditions=skein-source',
      '--import',
      'tsx',
      join(import.meta.dirname, 'boot-child.ts'),
      mode,
      db,
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  )
  children.push(proc)
  let out = ''
  let err = ''
  proc.stdout.on('data', (d) => (out += d))
  proc.stderr.on('data', (d) => (err += d))
  const exit = new Promise<void>((resolve) => proc.on('exit', () => resolve()))
  return { name: `the ${mode} child`, proc, exit, output: () => ({ out, err }) }
}

async function readLogs(db: string): Promise<Map<string, EventEnvelope[]>> {
  const store = sqliteStore({ path: db })
  try {
    return new Map([
      ['in-flight', await store.read('in-flight')],
      ['nap', await store.read('nap')],
    ])
  } finally {
    await store.close()
  }
}

const finished = (log: EventEnvelope[] | undefined) => log?.at(-1)?.type === 'runtime.run.completed'

it('a new process that only creates the engine re-runs the interrupted attempt and fires the due timer', async () => {
  const db = join(dir, `runs-${++tries}.db`)
  const first = spawnChild(db, 'first')
  const output = () => `${first.output().out}\n${first.output().err}`
  await waitFor('the first child ready', () => first.output().out.includes('ready'), {
    children: [{ ...first, output }],
    withinMs: 30_000,
  })
  expect(first.output().out).toContain('ready running running')
  first.proc.kill('SIGKILL')
  await first.exit
  const before = await readLogs(db)
  expect(before.get('in-flight')?.at(-1)?.type).toBe('runtime.effect.attempt.started')
  expect(before.get('nap')?.some((e) => e.type === 'runtime.timer.set')).toBe(true)
  await sleep(400) // the nap's timer falls due while no process runs

  const second = spawnChild(db, 'second')
  let logs = await readLogs(db)
  // Real processes and real time: a generous bound, polled, never a timed assertion.
  for (let i = 0; i < 300 && !(finished(logs.get('in-flight')) && finished(logs.get('nap'))); i++) {
    await sleep(50)
    logs = await readLogs(db)
  }
  second.proc.kill('SIGKILL')
  await second.exit
  const inFlight = logs.get('in-flight') ?? []
  expect(inFlight.at(-1)?.payload, second.output().err).toEqual({
    output: { call: 'done after restart' },
  })
  expect(inFlight.find((e) => e.type === 'runtime.effect.failed')?.payload).toMatchObject({
    attempt: 1,
    reason: 'interrupted',
  })
  const nap = logs.get('nap') ?? []
  expect(nap.some((e) => e.type === 'runtime.timer.fired')).toBe(true)
  expect(finished(nap)).toBe(true)
  // The logger saw the boot: two runs with deadlines, both due at once.
  const ready = second
    .output()
    .out.split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line))
    .find((entry) => entry.msg?.startsWith('engine ready'))
  expect(ready).toMatchObject({ level: 'info', scheduled: 2, dueNow: 2 })
}, 60_000)
