// A port that is already taken is one clear error everywhere: ready() and serve() reject
// with PORT_IN_USE, the observer and the logger hear of it, and `skein serve` and `npm start`
// print one line and exit non-zero.
import { spawn } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { createServer, type Server } from 'node:net'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { createEngine, type Engine, type Logger, type Observation } from 'skein'
import { workflow } from 'skein/workflow'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { runCli } from '../../src/cli/index.js'
import { exitWithin } from '../support/children.js'
import { freshPath } from '../support/temp-dirs.js'

let blocker: Server
let port: number
const dir = mkdtempSync(join(tmpdir(), 'skein-port-'))
const engines: Engine[] = []

beforeAll(async () => {
  blocker = createServer()
  await new Promise<void>((r) => blocker.listen(0, '127.0.0.1', r))
  port = (blocker.address() as { port: number }).port
})
afterAll(async () => {
  await Promise.all(engines.map((e) => e.stop()))
  await new Promise((r) => blocker.close(r))
  rmSync(dir, { recursive: true, force: true })
})

describe('a busy port', () => {
  it('createEngine({ serve }) rejects ready() with PORT_IN_USE, tells the observer and the logger', async () => {
    const observations: Observation[] = []
    const errors: Array<[Record<string, unknown>, string | undefined]> = []
    const logger: Logger = {
      debug() {},
      info() {},
      warn() {},
      error: (fields, message) => errors.push([fields, message]),
    }
    const engine = createEngine({
      modules: [workflow()],
      serve: { port },
      observer: (o) => observations.push(o),
      logger,
    })
    engines.push(engine)
    const failure = await engine.ready().then(
      () => null,
      (error) => error,
    )
    expect(failure).toMatchObject({ code: 'PORT_IN_USE', details: { port, hostname: '127.0.0.1' } })
    expect(failure.message).toBe(
      `port ${port} on 127.0.0.1 is already in use: stop the process that holds it, or serve on another port (0 picks a free one)`,
    )
    expect(observations).toContainEqual(
      expect.objectContaining({ type: 'serve.failed', port, code: 'PORT_IN_USE' }),
    )
    expect(observations.some((o) => o.type === 'wake.finished')).toBe(false)
    expect(errors).toEqual([
      [expect.objectContaining({ port, code: 'PORT_IN_USE' }), failure.message],
    ])
    // The engine itself still works in process.
    expect(await engine.listRuns()).toEqual([])
  })

  it('engine.serve() rejects with the same error', async () => {
    const engine = createEngine({ modules: [workflow()] })
    engines.push(engine)
    await expect(engine.serve({ port })).rejects.toMatchObject({ code: 'PORT_IN_USE' })
  })

  it('skein serve prints one line naming the port and --port, and exits 1', async () => {
    let stdout = ''
    let stderr = ''
    const code = await runCli(['serve', '--db', ':memory:', '--port', String(port)], {
      stdout: { write: (t: string) => (stdout += t) },
      stderr: { write: (t: string) => (stderr += t) },
      cwd: dir,
    })
    expect(code).toBe(1)
    const lines = stderr.split('\n').filter((l) => l && !l.startsWith('no module file'))
    expect(lines).toEqual([
      `skein: port ${port} on 127.0.0.1 is already in use: stop the process that holds it, or pass --port <another port> (0 picks a free one)`,
    ])
    expect(stdout).not.toContain('skein serving')
  })

  it('npm start (examples/demo-host.ts) prints one line and exits non-zero', async () => {
    const root = resolve(import.meta.dirname, '../..')
    const child = spawn(
      process.execPath,
      ['--conditions=skein-source', '--import', 'tsx', 'examples/demo-host.ts'],
      {
        cwd: root,
        env: { ...process.env, PORT: String(port), SKEIN_DIR: freshPath(dir, 'demo') },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    )
    let out = ''
    let err = ''
    child.stdout.on('data', (d) => (out += d))
    child.stderr.on('data', (d) => (err += d))
    const output = () => `${out}\n${err}`
    const { code } = await exitWithin({ name: 'the demo host', proc: child, output }, 45_000)
    expect(code).not.toBe(0)
    expect(code).not.toBeNull()
    expect(err.trim().split('\n')).toEqual([
      `demo host: port ${port} on 127.0.0.1 is already in use: stop the process that holds it, or start with PORT=<another port> npm start (PORT=0 picks a free one)`,
    ])
    expect(out).not.toContain('Try it')
  }, 60_000)
})

describe('the serve option and stop', () => {
  it('a stop before the server listens reports no failure and leaves no server behind', async () => {
    const observations: Observation[] = []
    const engine = createEngine({
      modules: [workflow()],
      serve: { port: 0 },
      observer: (o) => observations.push(o),
    })
    await engine.stop()
    await expect(engine.ready()).rejects.toMatchObject({ code: 'ENGINE_STOPPED' })
    expect(observations.filter((o) => o.type === 'serve.failed')).toEqual([])
  })
})
