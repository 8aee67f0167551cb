import { type ChildProcess, spawn } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { sqliteStore } from 'skein/sqlite'
import { afterAll, describe, expect, it } from 'vitest'

// Engine timers are unref'd so an idle engine never keeps a process alive; a pending call a
// user awaits (here: signals waiting for another process to let the run's lease go) must.

const root = resolve(import.meta.dirname, '../..')
const dir = mkdtempSync(join(tmpdir(), 'skein-pending-'))
const children: ChildProcess[] = []
afterAll(() => {
  for (const child of children) if (child.exitCode === null) child.kill('SIGKILL')
  rmSync(dir, { recursive: true, force: true })
})

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
  const printed = (line: string) =>
    new Promise<void>((ok, fail) => {
      const look = () => {
        if (out.includes(line)) ok()
      }
      proc.stdout.on('data', look)
      exited.then(({ code }) => fail(new Error(`exited ${code} before "${line}": ${err}`)))
    })
  return { proc, exited, printed }
}

describe('a pending call keeps its process alive; idle engine timers do not', () => {
  it('30 signals waiting on a lease another process holds are all written', async () => {
    const db = join(dir, 'held.db')
    const holder = child('hold', db)
    await holder.printed('holding')
    const sender = child('signal', db, '30')
    const { code, out, err } = await sender.exited
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
    const idle = child('idle', join(dir, 'idle.db'))
    const { code, out, err } = await idle.exited
    expect(code, err).toBe(0)
    expect(out).toContain('started')
  }, 60_000)
})
