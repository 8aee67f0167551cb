import { mkdtempSync, rmSync } from 'node:fs'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type CliIo, runCli } from '../../src/cli/index.js'
import { freshPath } from '../support/temp-dirs.js'

interface Captured {
  code: number
  stdout: string
  stderr: string
}

const dir = mkdtempSync(join(tmpdir(), 'skein-cli-'))
const fixture = join(import.meta.dirname, 'fixture-modules.ts')

/** Runs `skein serve` through runCli until `stop()`; resolves once it listens. */
async function serve(args: string[], env: CliIo['env'] = {}) {
  const controller = new AbortController()
  const out: string[] = []
  const err: string[] = []
  let listening!: (info: { url: string; db: string }) => void
  const ready = new Promise<{ url: string; db: string }>((r) => (listening = r))
  const done = runCli(['serve', ...args], {
    stdout: { write: (t: string) => out.push(t) },
    stderr: { write: (t: string) => err.push(t) },
    env,
    signal: controller.signal,
    cwd: dir,
    onListening: listening,
  })
  const info = await Promise.race([
    ready,
    done.then((code) => {
      throw new Error(`serve exited ${code}: ${err.join('')}`)
    }),
  ])
  return {
    ...info,
    out,
    stop: async () => {
      controller.abort()
      return done
    },
  }
}

let server: Awaited<ReturnType<typeof serve>>

const cli = async (args: string[], io: Partial<CliIo> = {}): Promise<Captured> => {
  let stdout = ''
  let stderr = ''
  const code = await runCli(args, {
    stdout: { write: (t: string) => (stdout += t) },
    stderr: { write: (t: string) => (stderr += t) },
    env: { SKEIN_URL: server.url },
    ...io,
  })
  return { code, stdout, stderr }
}
const json = async (args: string[]) => {
  const r = await cli([...args, '--json'])
  expect(r.stderr).toBe('')
  expect(r.code).toBe(0)
  return JSON.parse(r.stdout)
}

beforeAll(async () => {
  server = await serve([fixture, '--db', 'runs/cli.db', '--port', '0'])
})
afterAll(async () => {
  expect(await server.stop()).toBe(0)
  rmSync(dir, { recursive: true, force: true })
})

/** Run ids and keys on the shared server, new on each try: a retried test must not meet its
 * first try's runs. */
let named = 0
const perTry = (id: string) => `${id}-${++named}`
/** The run the walk-through test completes; the error test asks it what a finished run refuses. */
let reviewed = 'r1'

describe('skein CLI against a served SQLite engine', () => {
  it('serve prints its url, debugger url, store and modules, and serves the debugger', async () => {
    expect(server.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/)
    expect(server.db).toBe(join(dir, 'runs/cli.db'))
    expect(server.out.join('')).toContain(
      `skein serving ${server.url}\n  debugger ${server.url}/_skein/\n`,
    )
    expect(server.out.join('')).toContain('modules workflow, approval')
    const page = await fetch(`${server.url}/_skein/`)
    expect(page.status).toBe(200)
    expect(await page.text()).toContain('<div id="app">')
  })

  it('serve --no-debugger serves none, --debugger moves it, a bad path is refused', async () => {
    const none = await serve([
      fixture,
      '--db',
      freshPath(dir, 'nodebug.db'),
      '--port',
      '0',
      '--no-debugger',
    ])
    expect(none.out.join('')).not.toContain('debugger')
    expect((await fetch(`${none.url}/_skein/`)).status).toBe(404)
    expect(await none.stop()).toBe(0)
    const moved = await serve([
      fixture,
      '--db',
      freshPath(dir, 'moved.db'),
      '--port',
      '0',
      '--debugger',
      '/ops',
    ])
    expect(moved.out.join('')).toContain(`  debugger ${moved.url}/ops/\n`)
    expect((await fetch(`${moved.url}/ops/`)).status).toBe(200)
    expect(await moved.stop()).toBe(0)
    const bad = await cli(['serve', fixture, '--port', '0', '--debugger', 'no-slash'])
    expect(bad.code).not.toBe(0)
    expect(bad.stderr).toMatch(/--debugger: /)
  })

  it('start, runs, get, approvals, approve, events, replay, inspect, wake', async () => {
    const r1 = perTry('r1')
    reviewed = r1
    const started = await cli([
      'start',
      'workflow',
      'review',
      '--input',
      '{"topic":"cli"}',
      '--run-id',
      r1,
    ])
    expect(started).toMatchObject({ code: 0, stderr: '' })
    expect(started.stdout).toContain(`started ${r1}`)
    expect(started.stdout).toContain(`run ${r1}: running`)

    expect((await cli(['runs'])).stdout).toMatch(
      new RegExp(`${r1}\\s+running\\s+workflow:review@v1`),
    )
    const { runs } = await json(['runs'])
    expect(runs.map((r: { runId: string }) => r.runId)).toContain(r1)

    const got = await json(['get', r1])
    expect(got.state).toMatchObject({ runId: r1, status: 'running' })

    const approvals = await json(['approvals', r1])
    expect(approvals.items).toHaveLength(1)
    expect((await cli(['approvals', r1])).stdout).toContain('pending  Publish?')

    const approved = await cli(['approve', r1, '--by', 'ada'])
    expect(approved.code).toBe(0)
    expect(approved.stdout).toContain(`run ${r1}: completed`)

    const { events } = await json(['events', r1])
    const seqs = events.map((e: { seq: number }) => e.seq)
    expect(seqs).toEqual(Array.from({ length: seqs.length }, (_, i) => i + 1))
    const decided = events.find((e: { type: string }) => e.type === 'approval.decided')
    // --by is a display name; the decider (`by`) is the server's view of the caller: no auth here.
    expect(decided.payload).toMatchObject({ outcome: 'approve', name: 'ada', by: null })
    const tail = await cli(['events', r1, '--from', String(seqs.length), '--limit', '5'])
    expect(tail.stdout.trim().split('\n')).toHaveLength(1)
    expect(tail.stdout).toContain('runtime.run.completed')

    const replay = await cli(['replay', r1, String(seqs.length)])
    expect(replay.stdout).toContain('status   running -> completed')
    expect((await json(['replay', r1, '999'])).step).toBeNull()

    const inspect = await cli(['inspect', r1])
    expect(inspect.stdout).toContain(`run ${r1}: completed  (log 1..${seqs.length})`)
    expect((await json(['inspect', r1])).tail).toBe(seqs.length)
    expect((await cli(['wake', r1])).stdout).toContain(`woke ${r1}`)
  })

  it('signal with an idempotency key appends once; reject by explicit approval id', async () => {
    const [w1, startKey, r2] = [perTry('w1'), perTry('start'), perTry('r2')]
    await json(['start', 'workflow', 'waiter', '--run-id', w1])
    const payload = '{"trackingId":"T-1"}'
    const first = await json(['signal', w1, 'order.shipped', '--payload', payload, '--key', 'k1'])
    expect(first.state.status).toBe('completed')
    expect(first.state.output).toEqual({ trackingId: 'T-1' })
    const again = await json(['signal', w1, 'order.shipped', '--payload', payload, '--key', 'k1'])
    expect(again.state.lastSeq).toBe(first.state.lastSeq)
    const reused = await cli(['signal', w1, 'order.shipped', '--payload', '{}', '--key', 'k1'])
    expect(reused.code).toBe(1)
    expect(reused.stderr).toMatch(/^skein: IDEMPOTENCY_CONFLICT: .*\(HTTP 409\)\n$/)

    // A keyed start without --run-id: the retry returns the run the key created.
    const keyed = await json(['start', 'workflow', 'waiter', '--key', startKey])
    const retried = await json(['start', 'workflow', 'waiter', '--key', startKey])
    expect(retried.runId).toBe(keyed.runId)
    expect(retried.state.lastSeq).toBe(keyed.state.lastSeq)

    await json(['start', 'workflow', 'review', '--input', '{"topic":"x"}', '--run-id', r2])
    const [item] = (await json(['approvals', r2])).items
    const rejected = await json(['reject', r2, item.approvalId, '--comment', 'not yet'])
    expect(rejected.state.output).toMatchObject({ done: 'reject' })
  })

  it('events --follow streams over SSE until the run ends', async () => {
    const f1 = perTry('f1')
    await json(['start', 'workflow', 'review', '--input', '{"topic":"live"}', '--run-id', f1])
    let stdout = ''
    let sawGate!: () => void
    const gateSeen = new Promise<void>((r) => (sawGate = r))
    const following = runCli(['events', f1, '--follow', '--url', server.url], {
      stdout: {
        write: (t: string) => {
          stdout += t
          if (t.includes('runtime.wait.registered')) sawGate()
        },
      },
      stderr: { write: (t: string) => (stdout += `ERR ${t}`) },
    })
    await gateSeen
    expect((await cli(['approve', f1])).code).toBe(0)
    expect(await following).toBe(0)
    const lines = stdout.trim().split('\n')
    expect(lines.at(-1)).toContain('runtime.run.completed')
    const seqs = lines.map((l) => Number(l.trim().split(/\s+/)[0]))
    expect(seqs).toEqual(Array.from({ length: seqs.length }, (_, i) => i + 1))
  })

  it('errors are one line on stderr with a non-zero exit', async () => {
    const missing = await cli(['get', 'nope'])
    expect(missing.code).toBe(1)
    expect(missing.stdout).toBe('')
    expect(missing.stderr).toBe('skein: RUN_NOT_FOUND: run nope not found (HTTP 404)\n')

    const badJson = await cli(['start', 'workflow', 'review', '--input', '{nope'])
    expect(badJson.code).toBe(1)
    expect(badJson.stderr).toMatch(/^skein: --input is not valid JSON: .*\n$/)

    const unknownDef = await cli(['start', 'workflow', 'ghost'])
    expect(unknownDef.stderr).toMatch(/^skein: DEFINITION_NOT_FOUND: .*\(HTTP 404\)\n$/)

    const badSeq = await cli(['replay', reviewed, 'x'])
    expect(badSeq).toMatchObject({
      code: 1,
      stderr: 'skein: seq must be a non-negative integer, got "x"\n',
    })

    const noPending = await cli(['approve', reviewed])
    expect(noPending.stderr).toBe(`skein: run ${reviewed} has no pending approval\n`)

    // An approval id the run does not have pending fails with the server's error.
    await cli(['start', 'workflow', 'review', '--run-id', 'bogus-run', '--input', '{"topic":"x"}'])
    const bogus = await cli(['approve', 'bogus-run', 'bogus-id'])
    expect(bogus.code).toBe(1)
    expect(bogus.stdout).toBe('')
    expect(bogus.stderr).toMatch(
      /^skein: INVALID_EVENT: approval "bogus-id" is not pending in run bogus-run.*\(HTTP 400\)\n$/,
    )
    expect((await json(['get', 'bogus-run'])).state.status).toBe('running')

    const unknown = await cli(['frobnicate'])
    expect(unknown.code).toBe(2)
    expect(unknown.stderr).toContain("unknown command 'frobnicate'")

    const url = await closedPortUrl()
    const down = await cli(['runs', '--url', url])
    expect(down.code).toBe(1)
    expect(down.stderr).toBe(`skein: cannot reach the Skein server at ${url}: ECONNREFUSED\n`)
  })

  it('--help exits 0 and lists the commands', async () => {
    const help = await cli(['--help'])
    expect(help.code).toBe(0)
    for (const c of ['serve', 'start', 'runs', 'events', 'approve', 'signal', 'replay', 'inspect'])
      expect(help.stdout).toContain(c)
  })

  it('runs survive a restart of serve on the same file', async () => {
    const db = freshPath(dir, 'restart.db')
    const again = await serve([fixture, '--db', db, '--port', '0'])
    const c = (args: string[]) => cli([...args, '--url', again.url])
    await c(['start', 'workflow', 'review', '--input', '{"topic":"r"}', '--run-id', 'keep'])
    await again.stop()
    const reopened = await serve([fixture, '--db', db, '--port', '0'])
    expect(reopened.out.join('')).toContain('(1 run(s))')
    const r = await cli(['approve', 'keep', '--json', '--url', reopened.url])
    expect(JSON.parse(r.stdout).state.status).toBe('completed')
    await reopened.stop()
  })

  it('serve --token requires the bearer token; SKEIN_TOKEN supplies it', async () => {
    const secured = await serve([
      fixture,
      '--db',
      freshPath(dir, 'auth.db'),
      '--port',
      '0',
      '--token',
      's3cret',
    ])
    const denied = await cli(['runs', '--url', secured.url])
    expect(denied).toMatchObject({ code: 1 })
    expect(denied.stderr).toMatch(/^skein: UNAUTHORIZED: .*\(HTTP 401\)\n$/)
    const allowed = await cli(['runs', '--json'], {
      env: { SKEIN_URL: secured.url, SKEIN_TOKEN: 's3cret' },
    })
    expect(allowed.code).toBe(0)
    expect(JSON.parse(allowed.stdout).runs).toEqual([])
    await secured.stop()
  })

  it('effects, retry and rescan: the operator commands, with an operations token', async () => {
    const secured = await serve([
      fixture,
      '--db',
      freshPath(dir, 'ops.db'),
      '--port',
      '0',
      '--token',
      'ops',
    ])
    const env = { SKEIN_URL: secured.url, SKEIN_TOKEN: 'ops' }
    const run = async (args: string[]) => {
      const r = await cli([...args, '--json'], { env })
      expect(r.stderr).toBe('')
      return JSON.parse(r.stdout)
    }
    const { runId } = await run(['start', 'workflow', 'manual'])
    const status = await run(['inspect', runId])
    const [effect] = status.effects
    expect(effect.status).toBe('ambiguous')
    const listed = await run(['effects', runId])
    expect(listed.effects.find((e: any) => e.effectId === effect.effectId)).toMatchObject({
      type: 'ops.manual',
      status: 'ambiguous',
    })
    const human = await cli(['effects', runId], { env })
    expect(human.stdout).toContain('ops.manual')
    const retried = await run(['retry', runId, effect.effectId])
    expect(retried.effectId).toBe(effect.effectId)
    const events = await run(['events', runId])
    const scheduled = events.events.filter((e: any) => e.type === 'runtime.effect.retry.scheduled')
    expect(scheduled[0].payload.reason).toBe('operator')
    const rescan = await run(['rescan'])
    expect(typeof rescan.scheduled).toBe('number')
    // The module file's projector, caught up once the events above are handed to it.
    for (let i = 0; i < 200; i++) {
      const [counter] = (await run(['projectors'])).projectors
      expect(counter).toMatchObject({ name: 'counter', state: 'running' })
      if (counter.lagEvents === 0) break
      await new Promise((r) => setTimeout(r, 50))
    }
    const projectorsText = await cli(['projectors'], { env })
    expect(projectorsText.stdout).toMatch(/counter\s+running\s+\S+\s+\d+\s+0\s+0\s+-/)
    const refused = await cli(['retry', runId, 'no-such-effect'], { env })
    expect(refused.code).toBe(1)
    expect(refused.stderr).toMatch(/EFFECT_NOT_FOUND/)
    // requeue (and --fail) act on a worker attempt in a worker's hands; this host has no
    // worker queue, so the effect is ambiguous and both are refused, nothing written.
    for (const args of [
      ['requeue', runId, effect.effectId],
      ['requeue', runId, effect.effectId, '--fail'],
    ]) {
      const notInHands = await cli(args, { env })
      expect(notInHands.code).toBe(1)
      expect(notInHands.stderr).toMatch(/EFFECT_NOT_RETRYABLE/)
    }
    await secured.stop()
  })

  it('serve rejects a module file without modules, in one line', async () => {
    const r = await cli(['serve', join(import.meta.dirname, 'empty-module.ts'), '--db', ':memory:'])
    expect(r.code).toBe(1)
    expect(r.stderr).toMatch(/^skein: .*empty-module\.ts exports no modules: .*\n$/)
  })
})

/** A loopback url where nothing listens. */
async function closedPortUrl(): Promise<string> {
  const s = createServer()
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r))
  const { port } = s.address() as { port: number }
  await new Promise<void>((r) => s.close(() => r()))
  return `http://127.0.0.1:${port}`
}
