import { type ChildProcess, spawn } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { sqliteStore } from 'skein/sqlite'
import { afterAll, afterEach, describe, expect, it } from 'vitest'
import { childWithin, endChildren } from '../support/children.js'

// Engine timers are unref'd so an idle engine never keeps a process alive; a pending call a
// user awaits (here: signals waiting for another process to let the run's lease go) must.

const root = resolve(import.meta.dirname, '../..')
const dir = mkdtempSync(join(tmpdir(), 'skein-pending-'))
const children: ChildProcess[] = []
// A try's processes end with it (a first try's holder must not hold on while the retry runs).
afterEach(() => endChildren(children))
afterAll(() => rmSync(dir, { recursive: true, force: true }))
// Each try on a file of its own: a retried test must not find the first try's run and notes.
let files = 0
const fresh = (name: string) => join(dir, `${name}-${++files}.db`)

function child(...args: string[]) {
  const proc = spawn(
    process.execPath,
    ['--conditions=skein-source', '--import', 'tsx', 'test/lifecycle/pending-child.ts', ...args],
    { cwd: root, stdio: ['pipe', 'pipe', 'pipe'] },
  )
  children.push(proc)
  let out = ''
  let err = ''
  proc.stdout.on('data', (d) => (out += d))
  proc.stderr.on('data', (d) => (err += d))
  const exited = new Promise<{ code: number | null; out: string; err: string }>((r) =>
    proc.on('exit', (code) => r({ code, out, err })),
  )
  const watched = { name: `the ${args[0]} child`, proc, output: () => `${out}\n${err}` }
  const printed = (line: string) =>
    childWithin(
      `"${line}" from ${watched.name}`,
      watched,
      new Promise<void>((ok, fail) => {
        const look = () => {
          if (out.includes(line)) ok()
        }
        proc.stdout.on('data', look)
        exited.then(({ code }) => fail(new Error(`exited ${code} before "${line}": ${err}`)))
      }),
      30_000,
    )
  /** Its exit, within `ms` (past it, it is killed and the wait fails with its output). */
  const exit = (ms: number) => childWithin(`${watched.name} to exit`, watched, exited, ms)
  return { proc, exited, printed, exit }
}

describe('a pending call keeps its process alive; idle engine timers do not', () => {
  it('30 signals waiting on a lease another process holds are all written', async () => {
    const db = fresh('held')
    const holder = child('hold', db)
    await holder.printed('holding')
    const sender = child('signal', db, '30')
    const { code, out, err } = await sender.exit(90_000)
    expect(err, 'the sender exited with unsettled calls').not.toMatch(/unsettled top-level await/i)
    expect(code, err).toBe(0)
    expect(out).toContain('signalled 30')
    holder.proc.kill('SIGKILL')
    await holder.exited
    const store = sqliteStore({ path: db })
    const notes = (await store.read('held')).filter((e) => e.type === 'hold.note')
    await store.close()
    expect(notes).toHaveLength(30)
  }, 120_000)

  it('an engine with only a parked run (an hour-long timer) lets its script end', async () => {
    const idle = child('idle', fresh('idle'))
    const { code, out, err } = await idle.exit(45_000)
    expect(code, err).toBe(0)
    expect(out).toContain('started')
  }, 60_000)
})
