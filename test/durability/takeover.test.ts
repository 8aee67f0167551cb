import { type ChildProcess, spawn } from 'node:child_process'
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { afterAll, describe, expect, it } from 'vitest'

// Same-host take-over on one SQLite file after kill -9 of the process whose attempt was in
// flight (docs/storage.md, "Several processes on one file"): how long until another process
// runs the attempt again, by the background claim poll alone and by a call for the run.

const root = resolve(import.meta.dirname, '../..')
const dir = mkdtempSync(join(tmpdir(), 'skein-takeover-'))
const children: ChildProcess[] = []
afterAll(() => {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL')
  rmSync(dir, { recursive: true, force: true })
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
    { cwd: root, stdio: ['pipe', 'pipe', 'inherit'] },
  )
  children.push(proc)
  let out = ''
  proc.stdout?.on('data', (d) => (out += d))
  const printed = async (line: string) => {
    while (!out.includes(line)) {
      if (proc.exitCode !== null) throw new Error(`${mode} exited ${proc.exitCode}`)
      await sleep(20)
    }
  }
  return { proc, printed }
}

const marksOf = (path: string) =>
  existsSync(path)
    ? readFileSync(path, 'utf8')
        .trim()
        .split('\n')
        .map((line) => line.split(' ').map(Number) as [number, number])
    : []

async function takeOver(name: string, mode: 'standby' | 'call') {
  const db = join(dir, `${name}.db`)
  const marks = join(dir, `${name}.marks`)
  const standby = child(mode, db, marks)
  await standby.printed('ready')
  const first = child('first', db, marks)
  while (marksOf(marks).length === 0) await sleep(10)
  first.proc.kill('SIGKILL')
  const killedAt = Date.now()
  await new Promise((r) => first.proc.once('exit', r))
  if (mode === 'call') standby.proc.stdin?.write('go\n')
  while (marksOf(marks).length < 2) await sleep(10)
  const [[firstPid], [againPid, againAt]] = marksOf(marks) as [[number, number], [number, number]]
  expect(firstPid).toBe(first.proc.pid)
  expect(againPid).toBe(standby.proc.pid)
  standby.proc.kill('SIGKILL')
  return againAt - killedAt
}

describe('same-host take-over after kill -9 (one SQLite file, real processes)', () => {
  it('the claim poll runs the in-flight attempt again once the lease expires; a call takes over at once', async () => {
    const byPoll = await takeOver('poll', 'standby')
    const byCall = await takeOver('call', 'call')
    process.stdout.write(
      `SCORE same-host-takeover sqlite lease_ms=10000 poll_ms=500 by_claim_poll_ms=${byPoll} by_call_ms=${byCall}\n`,
    )
  }, 120_000)
})
