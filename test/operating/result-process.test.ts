// engine.result from another process on the same SQLite file: the pending result alone keeps
// that process alive, and the file's change feed tells it when the run ends.
import { spawn } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createEngine } from 'skein'
import { sqliteStore } from 'skein/sqlite'
import { workflow } from 'skein/workflow'
import { afterAll, expect, it } from 'vitest'
import { childWithin, exitWithin } from '../support/children.js'
import { breaks, waits } from './result-workflows.js'

const dir = mkdtempSync(join(tmpdir(), 'skein-result-process-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))
let tries = 0

it('a second process awaits the result of a run this one finishes', {
  timeout: 60_000,
}, async () => {
  // A file per try: a retried test starts on a store of its own.
  const path = join(dir, `shared-${++tries}.db`)
  const engine = createEngine({
    store: sqliteStore({ path }),
    modules: [workflow({ definitions: [waits, breaks] })],
  })
  try {
    const { runId } = await engine.start(waits)
    const child = spawn(
      process.execPath,
      [
        '--conditions=skein-source',
        '--import',
        'tsx',
        join(import.meta.dirname, 'result-child.ts'),
        path,
        runId,
      ],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    )
    let out = ''
    let err = ''
    child.stderr.on('data', (d) => (err += d))
    const exit = new Promise<number | null>((r) => child.on('exit', (code) => r(code)))
    const watched = { name: 'the result child', proc: child, output: () => `${out}\n${err}` }
    await childWithin(
      'the child waiting',
      watched,
      new Promise<void>((resolve, reject) => {
        child.stdout.on('data', (d) => {
          out += d
          if (out.includes('waiting\n')) resolve()
        })
        void exit.then((code) => reject(new Error(`child exited ${code} before waiting: ${err}`)))
      }),
      30_000,
    )
    // Long enough for a child without a hold on its event loop to have exited already.
    await new Promise((r) => setTimeout(r, 300))
    expect(child.exitCode).toBe(null)
    await engine.signal(runId, [{ type: 'app.go', payload: { ok: 42 } }])
    expect((await exitWithin(watched, 20_000)).code).toBe(0)
    const line = out.split('\n').find((l) => l.startsWith('output '))
    expect(JSON.parse(line!.slice('output '.length))).toEqual((await engine.getRun(runId)).output)
  } finally {
    await engine.stop()
  }
})
