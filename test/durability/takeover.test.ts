import { type ChildProcess, spawn } from 'node:child_process'
import { existsSync, mkdirSync, readFileSync } from 'node:fs'
import { join, resolve } from 'node:path'
import Database from 'better-sqlite3'
import { afterEach, describe, expect, it } from 'vitest'
import { described, exitWithin, waitFor } from '../support/children.js'
import { tempDirs } from '../support/temp-dirs.js'

// Same-host take-over on one SQLite file after kill -9 of the process whose attempt was in
// flight (docs/storage.md, "Several processes on one file"): how long until another process
// runs the attempt again, by the background claim poll alone and by a call for the run.
// Each try gets its own directory, and every wait names its stage and what it saw
// (decisions.md, "A wait on a child process in a test names the child and the stage; a
// retried test starts clean").

const root = resolve(import.meta.dirname, '../..')
const dirs = tempDirs('skein-takeover-')
const children: ChildProcess[] = []
afterEach(() => {
  for (const c of children.splice(0))
    if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL')
})

function child(mode: string, db: string, marks: string) {
  const proc = spawn(
    process.execPath,
    [
      '--conditions=skein-source',
      '--import',
      'tsx',
      'test/durability/takeover-child.ts',
      mode,
      db,
      marks,
    ],
    { cwd: root, stdio: ['pipe', 'pipe', 'pipe'] },
  )
  children.push(proc)
  let out = ''
  proc.stdout?.on('data', (d) => (out += d))
  proc.stderr?.on('data', (d) => (out += d))
  return { name: mode, proc, output: () => out, printed: (line: string) => out.includes(line) }
}

const marksOf = (path: string) =>
  existsSync(path)
    ? readFileSync(path, 'utf8')
        .trim()
        .split('\n')
        .map((line) => line.split(' ').map(Number) as [number, number])
    : []

/** Run `r` as the file holds it: its row (lease, deadline) and its events' types. */
function runOnFile(db: string): string {
  if (!existsSync(db)) return 'no database file'
  const file = new Database(db, { readonly: true, fileMustExist: true })
  try {
    const row = file.prepare('SELECT * FROM skein_runs WHERE run_id = ?').get('r')
    const events = file
      .prepare(
        'SELECT e.seq, e.type FROM skein_events e JOIN skein_runs r ON r.run_no = e.run_no WHERE r.run_id = ? ORDER BY e.seq',
      )
      .all('r')
    return `run row: ${JSON.stringify(row)}\nevents: ${JSON.stringify(events)}`
  } catch (error) {
    return `could not read the file: ${String(error)}`
  } finally {
    file.close()
  }
}

async function takeOver(mode: 'standby' | 'call') {
  const dir = dirs.fresh()
  mkdirSync(dir)
  const db = join(dir, 'takeover.db')
  const marks = join(dir, 'takeover.marks')
  const standby = child(mode, db, marks)
  const seen = () => `marks ${JSON.stringify(marksOf(marks))}\n${runOnFile(db)}`
  const stage = { withinMs: 45_000, seen }
  await waitFor(`${mode}: standby ready`, () => standby.printed('ready'), {
    ...stage,
    children: [standby],
  })
  const first = child('first', db, marks)
  await waitFor(`${mode}: the first attempt`, () => marksOf(marks).length > 0, {
    ...stage,
    children: [standby, first],
  })
  first.proc.kill('SIGKILL')
  const killedAt = Date.now()
  await exitWithin(first, 10_000)
  expect(first.proc.signalCode, described(first)).toBe('SIGKILL')
  if (mode === 'call') standby.proc.stdin?.write('go\n')
  await waitFor(`${mode}: the attempt run again`, () => marksOf(marks).length >= 2, {
    ...stage,
    children: [standby],
  })
  const [[firstPid], [againPid, againAt]] = marksOf(marks) as [[number, number], [number, number]]
  expect(firstPid, seen()).toBe(first.proc.pid)
  expect(againPid, seen()).toBe(standby.proc.pid)
  standby.proc.kill('SIGKILL')
  return againAt - killedAt
}

describe('same-host take-over after kill -9 (one SQLite file, real processes)', () => {
  it('the claim poll runs the in-flight attempt again once the lease expires; a call takes over at once', async () => {
    const byPoll = await takeOver('standby')
    const byCall = await takeOver('call')
    process.stdout.write(
      `SCORE same-host-takeover sqlite lease_ms=10000 poll_ms=500 by_claim_poll_ms=${byPoll} by_call_ms=${byCall}\n`,
    )
  }, 150_000)
})
