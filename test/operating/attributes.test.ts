// Run attributes end to end on a real SQLite file and a real server: declared per definition,
// set at start (embed, POST /runs, the client, `skein start`) and by the run (a workflow node's
// `attributes`, the `attributes` command of a custom kind), refused with nothing written when
// bad, and searched by GET /runs/summaries, the client and `skein runs --attr`.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createEngine, type Engine, type ServerHandle } from 'skein'
import { createEngineClient } from 'skein/client'
import { sqliteStore } from 'skein/sqlite'
import { defineWorkflow } from 'skein/workflow'
import { afterAll, afterEach, describe, expect, it } from 'vitest'
import { runCli } from '../../src/cli/index.js'
import { commands, defineKind, defineModule } from '../../src/core/module-api.js'
import { workflow } from '../../src/modules/workflow/index.js'
import { freshPath } from '../support/temp-dirs.js'

const dir = mkdtempSync(join(tmpdir(), 'skein-attributes-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))
let engine: Engine
let server: ServerHandle | undefined
afterEach(async () => {
  await server?.close()
  server = undefined
  await engine?.stop()
})

const order = defineWorkflow({
  name: 'order',
  attributes: { customer: 'string', amount: 'number', vip: 'boolean', stage: 'string' },
  nodes: {
    charge: {
      run: (ctx) => ctx.waitFor('app.go'),
      attributes: ({ result }) => ({ stage: 'charged', vip: null, amount: result?.amount ?? 0 }),
    },
  },
})

/** A custom kind that tags its run from its input through the `attributes` command. */
const tagger = defineModule({
  namespace: 'tagger',
  kinds: {
    tagger: defineKind<null>({
      initialState: () => null,
      decide: (_s, ctx) => [
        commands.attributes({ customer: (ctx.input as { customer: string }).customer }),
        commands.complete(null),
      ],
    }),
  },
  definitions: [
    { kind: 'tagger', name: 'tag', version: 'v1', attributes: { customer: 'string' } },
    { kind: 'tagger', name: 'bad-tag', version: 'v1' },
  ],
})

async function cli(args: string[]) {
  let stdout = ''
  let stderr = ''
  const code = await runCli([...args, '--json'], {
    stdout: { write: (t: string) => (stdout += t) },
    stderr: { write: (t: string) => (stderr += t) },
    env: { SKEIN_URL: server!.url },
  })
  return { code, stdout, stderr }
}

describe('run attributes', () => {
  it('are set at start and by the run, refused when bad, and searched at every layer', async () => {
    engine = createEngine({
      store: sqliteStore({ path: freshPath(dir, 'attributes.db') }),
      modules: [workflow({ definitions: [order] }), tagger],
    })
    server = await engine.serve({ port: 0, hostname: '127.0.0.1' })
    const client = createEngineClient({ baseUrl: server.url })

    const a = await engine.start(order, undefined, {
      runId: 'o1',
      attributes: { customer: 'c1', amount: 10, vip: true },
    })
    expect(a.state.attributes).toEqual({ customer: 'c1', amount: 10, vip: true })
    await client.startRun({
      kind: 'workflow',
      definitionName: 'order',
      runId: 'o2',
      attributes: { customer: 'c2', amount: 42 },
    })
    const started = await cli([
      'start',
      'workflow',
      'order',
      '--run-id',
      'o3',
      '--attributes',
      '{"customer":"c1","amount":7}',
    ])
    expect(started.code, started.stderr).toBe(0)
    // The workflow node sets attributes when it finishes: stage, amount from its result, vip gone.
    await engine.signal('o1', [{ type: 'app.go', payload: { amount: 99 } }])
    expect((await engine.getRun('o1')).attributes).toEqual({
      customer: 'c1',
      amount: 99,
      stage: 'charged',
    })
    // A custom kind's command.
    await engine.startRun({
      kind: 'tagger',
      definitionName: 'tag',
      input: { customer: 'c1' },
      runId: 't1',
    })
    expect((await engine.getRun('t1')).attributes).toEqual({ customer: 'c1' })
    // The command with an undeclared attribute fails the run, with the reason.
    const bad = await engine.startRun({
      kind: 'tagger',
      definitionName: 'bad-tag',
      input: { customer: 'c1' },
    })
    expect(bad.state.status).toBe('failed')
    expect(JSON.stringify(bad.state.error)).toContain('INVALID_ATTRIBUTES')

    // Bad attributes at start: a clear 400, nothing written.
    for (const attributes of [{ nope: 'x' }, { amount: 'ten' }, { customer: 'x'.repeat(300) }]) {
      const error = await engine
        .start(order, undefined, { runId: 'refused', attributes: attributes as never })
        .catch((e) => e)
      expect(error.code).toBe('INVALID_REQUEST')
    }
    expect(await engine.listRuns()).not.toContain('refused')
    const http = await fetch(`${server.url}/runs`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        kind: 'workflow',
        definitionName: 'order',
        attributes: { amount: 'x' },
      }),
    })
    expect(http.status).toBe(400)
    expect((await http.json()).error.message).toContain('attribute amount must be a number')

    // Search: embed, HTTP, client, CLI.
    const ids = (runs: Array<{ runId: string }>) => runs.map((r) => r.runId)
    const embed = await engine.listRunSummaries({ attributes: { customer: 'c1' } })
    expect(ids(embed.runs)).toEqual(['t1', 'o3', 'o1'])
    expect(embed.runs.find((r) => r.runId === 'o1')?.attributes).toEqual({
      customer: 'c1',
      amount: 99,
      stage: 'charged',
    })
    const ranged = await engine.listRunSummaries({
      attributes: { customer: 'c1', amount: { min: 8 } },
      definitionName: 'order',
    })
    expect(ids(ranged.runs)).toEqual(['o1'])
    const page = await fetch(
      `${server.url}/runs/summaries?attr=amount>=10&attr=amount<=50&order=oldest`,
    )
    expect(ids((await page.json()).runs)).toEqual(['o2'])
    const viaClient = await client.listRunSummaries({
      attributes: { customer: 'c1', stage: 'charged' },
    })
    expect(ids(viaClient.runs)).toEqual(['o1'])
    const listed = await cli([
      'runs',
      '--attr',
      'customer=c1',
      '--attr',
      'amount<=10',
      '--status',
      'running',
    ])
    expect(listed.code, listed.stderr).toBe(0)
    expect(ids(JSON.parse(listed.stdout).runs)).toEqual(['o3'])
    // A number attribute's text that is not a number, an undeclared attribute, a bad form: 400.
    for (const query of ['attr=amount=ten', 'attr=nope=1', 'attr=customer', 'attr=vip>=true']) {
      const refused = await fetch(`${server.url}/runs/summaries?${query}`)
      expect(refused.status, query).toBe(400)
    }
  })

  it('refuses one attribute name declared with two types', () => {
    const other = defineWorkflow({
      name: 'other',
      attributes: { customer: 'number' },
      nodes: { a: { run: () => 1 } },
    })
    expect(() => createEngine({ modules: [workflow({ definitions: [order, other] })] })).toThrow(
      /attribute customer is a number, but another definition declares it a string/,
    )
  })
})
