import { bearerAuth, createEngine, type Engine, payload } from 'skein'
import { approval, defineApproval } from 'skein/approval'
import { createEngineClient } from 'skein/client'
import { defineWorkflow, workflow } from 'skein/workflow'
import { afterEach, describe, expect, it } from 'vitest'
import { z } from 'zod'
import { runCli } from '../../src/cli/index.js'

// GET /definitions: what can be started here, with each version's input schema as
// JSON Schema when the schema library can say it (Standard JSON Schema, e.g. zod 4).

const orderV1 = defineWorkflow({
  name: 'order',
  version: 'v1',
  input: z.object({ sku: z.string(), qty: z.number().int().optional() }),
  nodes: { take: { run: ({ input }) => input } },
})
const orderV2 = defineWorkflow({
  name: 'order',
  version: 'v2',
  input: z.object({ sku: z.string(), rush: z.boolean() }),
  nodes: { take: { run: ({ input }) => input } },
})
/** Typed only: its schema validates nothing and has no JSON Schema to give. */
const plain = defineWorkflow({
  name: 'plain',
  input: payload<{ anything: true }>(),
  nodes: { noop: { run: () => null } },
})
const signOff = defineApproval({ name: 'sign-off', title: () => 'Sign off?' })

const engines: Engine[] = []
afterEach(async () => {
  await Promise.all(engines.splice(0).map((e) => e.stop()))
})

function setup(options: Parameters<typeof createEngine>[0] = {}) {
  const engine = createEngine({
    modules: [
      workflow({ definitions: [orderV1, orderV2, plain] }),
      approval({ definitions: [signOff] }),
    ],
    ...options,
  })
  engines.push(engine)
  return engine
}

const EXPECTED = [
  {
    kind: 'workflow',
    name: 'order',
    defaultVersion: 'v2',
    versions: [
      {
        version: 'v1',
        inputSchema: {
          $schema: 'https://json-schema.org/draft/2020-12/schema',
          type: 'object',
          properties: { sku: { type: 'string' }, qty: { type: 'integer' } },
          required: ['sku'],
        },
      },
      {
        version: 'v2',
        inputSchema: {
          $schema: 'https://json-schema.org/draft/2020-12/schema',
          type: 'object',
          properties: { sku: { type: 'string' }, rush: { type: 'boolean' } },
          required: ['sku', 'rush'],
        },
      },
    ],
  },
  { kind: 'workflow', name: 'plain', defaultVersion: 'v1', versions: [{ version: 'v1' }] },
]

describe('GET /definitions', () => {
  it('lists kind, name, versions and JSON Schema inputs where the library provides them', async () => {
    const engine = setup()
    const res = (await engine.fetch(new Request('http://x/definitions')))!
    expect(res.status).toBe(200)
    const { definitions } = await res.json()
    // Properties' own keys (zod adds `maximum`/`minimum` for int) are not the point here.
    expect(definitions.slice(0, 2)).toMatchObject(EXPECTED)
    expect(definitions[0].versions[0].inputSchema.properties.qty.type).toBe('integer')
    // With its runs not yet finished, from the drift report (docs/deploys.md).
    expect(definitions[1].versions[0]).toEqual({
      version: 'v1',
      activeRuns: 0,
      safeToDelete: false,
    })
    expect(definitions[2]).toMatchObject({ kind: 'approval', name: 'sign-off' })
    expect(definitions).toHaveLength(3)
    expect((await engine.listDefinitions()).slice(0, 2)).toMatchObject(EXPECTED)
  })

  it('is a read route: a read token is required when one is set', async () => {
    const engine = setup({ authorize: bearerAuth({ read: 'r-token' }) })
    const denied = (await engine.fetch(new Request('http://x/definitions')))!
    expect(denied.status).toBe(401)
    const allowed = (await engine.fetch(
      new Request('http://x/definitions', { headers: { authorization: 'Bearer r-token' } }),
    ))!
    expect(allowed.status).toBe(200)
  })

  it('client.listDefinitions() and `skein definitions` over a real socket', async () => {
    const engine = setup()
    const server = await engine.serve({ port: 0 })
    const client = createEngineClient({ baseUrl: server.url })
    const { definitions } = await client.listDefinitions()
    expect(definitions.map((d) => `${d.kind}:${d.name}`)).toEqual([
      'workflow:order',
      'workflow:plain',
      'approval:sign-off',
    ])

    let stdout = ''
    const code = await runCli(['definitions', '--url', server.url], {
      stdout: { write: (t: string) => (stdout += t) },
      stderr: { write: () => {} },
    })
    expect(code).toBe(0)
    const lines = stdout.trim().split('\n')
    expect(lines[0]).toMatch(/^KIND\s+NAME\s+VERSIONS\s+INPUT$/)
    // INPUT: the default version's input, in short.
    expect(lines[1]).toMatch(/^workflow\s+order\s+v1, v2\*\s+\{ sku: string, rush: boolean \}$/)
    expect(lines[2]).toMatch(/^workflow\s+plain\s+v1\*\s+-$/)
    expect(lines[3]).toMatch(/^approval\s+sign-off\s+v1\*/)

    let json = ''
    await runCli(['definitions', '--json', '--url', server.url], {
      stdout: { write: (t: string) => (json += t) },
      stderr: { write: () => {} },
    })
    expect(JSON.parse(json)).toEqual({ definitions })
  })
})
