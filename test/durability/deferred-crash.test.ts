import { spawn } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { pathToFileURL } from 'node:url'
import { createEngine, defineEffect, defineModule, type EventEnvelope } from 'skein'
import { defineWorkflow, workflow } from 'skein/workflow'
import { afterAll, expect, it } from 'vitest'
import { exitWithin } from '../support/children.js'
import { postgresAvailable, testSchemas } from '../support/postgres.js'
import { openStoreSpec } from './store-spec.js'

// The start commit of a run whose first step is an in-process effect is deferred (written,
// not fsynced: durability.md, "One fsync per step"). A process killed right after that commit,
// while the handler runs, must lose nothing: the restarted host finds the run, records the
// attempt as interrupted and runs attempt 2. On SQLite the commit is written, not fsynced; on
// Postgres it commits with synchronous_commit off: either way a crash of the process loses
// nothing.

const dir = mkdtempSync(join(tmpdir(), 'skein-deferred-crash-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

const src = (path: string) => JSON.stringify(pathToFileURL(resolve(path)).href)

// The child's effect handler kills its own process: the deferred commit is the last thing the
// process did (its pass would sync it only after one more loop turn).
const CHILD = `
import { createEngine, defineEffect, defineModule } from ${src('src/index.ts')}
import { defineWorkflow, workflow } from ${src('src/modules/workflow/index.ts')}
import { openStoreSpec } from ${src('test/durability/store-spec.ts')}
const [spec] = process.argv.slice(2)
const fx = defineModule({
  namespace: 'fx',
  effects: {
    charge: defineEffect({
      execute: () => {
        process.kill(process.pid, 'SIGKILL')
        return new Promise(() => {})
      },
    }),
  },
})
const pay = defineWorkflow({ name: 'pay', nodes: { charge: { run: (ctx) => ctx.invoke('fx.charge', { cents: 500 }) } } })
const observer = (o) => {
  if (o.type === 'append' && o.outcome === 'ok') process.stdout.write('append deferSync=' + o.deferSync + '\\n')
}
const engine = createEngine({ store: openStoreSpec(spec), modules: [workflow({ definitions: [pay] }), fx], observer })
await engine.start(pay, null, { runId: 'pay-1' })
`

// A new store for each try: a retried test must not find the first try's run (its child would
// then find pay-1 done, never kill itself and never exit).
let tries = 0
const specs: Array<[kind: string, spec: () => string]> = [
  ['sqlite', () => `sqlite:${join(dir, `runs-${++tries}.db`)}`],
]
if (postgresAvailable('deferred-crash')) {
  const schemas = testSchemas('deferred')
  specs.push(['postgres', () => `postgres:${schemas.next()}`])
}

it.each(specs)(
  'a process killed right after a deferred commit loses nothing; the attempt is re-run as attempt 2 (%s store)',
  async (_kind, freshSpec) => {
    const spec = freshSpec()
    const script = join(dir, 'child.mjs')
    writeFileSync(script, CHILD)
    const child = spawn(
      process.execPath,
      ['--conditions=skein-source', '--import', 'tsx', script, spec],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    )
    let out = ''
    let err = ''
    child.stdout.on('data', (d) => (out += d))
    child.stderr.on('data', (d) => (err += d))
    const output = () => `${out}\n${err}`
    const { signal } = await exitWithin({ name: 'the child', proc: child, output }, 20_000)
    expect(signal, err).toBe('SIGKILL')
    expect(out.trim().split('\n')).toEqual(['append deferSync=true'])

    let calls = 0
    const fx = defineModule({
      namespace: 'fx',
      effects: {
        charge: defineEffect<{ cents: number }, { charged: number }>({
          execute: async ({ cents }) => {
            calls++
            return { charged: cents }
          },
        }),
      },
    })
    const pay = defineWorkflow({
      name: 'pay',
      nodes: { charge: { run: (ctx) => ctx.invoke('fx.charge', { cents: 500 }) } },
    })
    const store = openStoreSpec(spec)
    const engine = createEngine({ store, modules: [workflow({ definitions: [pay] }), fx] })
    try {
      await engine.ready() // boot rescan: the started attempt is a deadline due at once
      await expect.poll(async () => (await engine.getRun('pay-1')).status).toBe('completed')
      expect(calls).toBe(1)
      const events: EventEnvelope[] = await engine.getEvents('pay-1')
      const attempts = events.filter((e) => e.type === 'runtime.effect.attempt.started')
      expect(attempts.map((e) => (e.payload as { attempt: number }).attempt)).toEqual([1, 2])
      const failed = events.find((e) => e.type === 'runtime.effect.failed')
      expect(failed?.payload).toMatchObject({ attempt: 1, reason: 'interrupted', final: false })
      expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i + 1))
    } finally {
      await engine.stop()
      await store.close?.()
    }
  },
)
