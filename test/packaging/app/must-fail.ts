// Each line marked `expect-error` must fail to compile, and no other line may: the test
// compares the lines tsc reports with the marked ones.
import { createEngine, payload, type StandardSchema } from 'skein'
import { defineAgent, defineTool } from 'skein/agent'
import { approval, pendingApprovals } from 'skein/approval'
import { createEngineClient } from 'skein/client'
import { defineEvaluator } from 'skein/evaluator'
import { sqliteStore } from 'skein/sqlite'
import { manualClock } from 'skein/testing'
import { defineOrderedWorkflow, defineWorkflow, workflow } from 'skein/workflow'

const release = defineWorkflow({
  name: 'release',
  input: payload<{ topic: string }>(),
  nodes: {
    stamp: { run: () => ({ at: 1 }) },
    draft: { run: ({ input }) => ({ text: `About ${input.topic}` }) },
    check: { after: ['stamp'], run: ({ results }) => results.stamp.nope }, // expect-error
  },
  output: ({ results }) => results.draft.nope, // expect-error
})
defineWorkflow({
  name: 'typo',
  nodes: { a: { run: () => 1 }, b: { after: ['missing'], run: () => 2 } }, // expect-error
})
defineOrderedWorkflow({
  name: 'listed',
  nodes: [
    { id: 'draft', run: ({ input }) => ({ text: String(input) }) },
    { id: 'publish', after: ['draft'], run: ({ results }) => results.draft.nope }, // expect-error
  ],
})
const engine = createEngine({ modules: [workflow({ definitions: [release] }), approval()] })
await engine.start(release, { topic: 1 }) // expect-error
await engine.start(release) // expect-error
const { runId } = await engine.start(release, { topic: 'ok' })
const first = (await engine.project(runId, pendingApprovals)).items[0]
console.log(first.title) // expect-error

const input = payload<{ id: string }>()
defineTool({ name: 't', description: 'd', input, run: (args) => args.nope }) // expect-error
defineEvaluator({ name: 'e', routes: ['yes'], evaluate: () => ({ route: 'no' }) }) // expect-error
sqliteStore({ path: 1 }) // expect-error
createEngineClient({ baseUrl: new URL('http://x') }) // expect-error
manualClock('soon') // expect-error

// The typed client, told of the server's definitions, and typed reads embedded.
const byName: StandardSchema<{ by: string }> = {
  '~standard': {
    version: 1,
    vendor: 'app',
    validate: (value) =>
      typeof (value as { by?: unknown })?.by === 'string'
        ? { value: value as { by: string } }
        : { issues: [{ message: 'by must be a string' }] },
  },
}
const ship = defineWorkflow({
  name: 'ship',
  input: payload<{ sku: string }>(),
  signals: { 'ship.approved': byName },
  nodes: {
    approved: { run: (ctx) => ctx.waitFor('ship.approved') },
    other: { run: (ctx) => ctx.waitFor('ship.cancelled') }, // expect-error
  },
  output: ({ input, results }) => ({ sku: input.sku, by: results.approved.by }),
})
const client = createEngineClient<[typeof ship]>({ baseUrl: 'http://127.0.0.1:8787' })
await client.startRun({ kind: 'workflow', definitionName: 'ship', input: { sku: 'a' } })
await client.startRun({ kind: 'workflow', definitionName: 'shp', input: { sku: 'a' } }) // expect-error
await client.startRun({ kind: 'workflow', definitionName: 'ship', input: { sku: 2 } }) // expect-error
await client.start(ship, { sku: false }) // expect-error
const output = await client.result(runId, 'ship')
console.log(output.by.length, output.nope) // expect-error
console.log((await client.getRun(runId, 'ship')).state.output?.nope) // expect-error
await client.getRun(runId, 'shp') // expect-error
await client.signal(runId, [{ type: 'ship.approved', payload: { by: 'ada' } }])
await client.signal(runId, [{ type: 'ship.approved', payload: { by: 1 } }]) // expect-error
console.log((await engine.result(runId, ship)).nope) // expect-error
console.log((await engine.getRun(runId, ship)).output?.nope) // expect-error

// The embedded engine told of its definitions, and stream's input as start's.
const typedEngine = createEngine<[typeof ship]>({ modules: [workflow({ definitions: [ship] })] })
await typedEngine.signal(runId, [{ type: 'ship.approved', payload: { by: 'ada' } }])
await typedEngine.signal(runId, [{ type: 'ship.approved', payload: { by: 1 } }]) // expect-error
client.stream(ship, { sku: 'a' })
client.stream(ship) // expect-error
const rated = defineAgent({ name: 'rated', instructions: 'Help.', signals: { 'rated.by': byName } })
const agentClient = createEngineClient<[typeof rated]>({ baseUrl: 'http://127.0.0.1:8787' })
await agentClient.signal(runId, [{ type: 'rated.by', payload: { by: 'ada' } }])
await agentClient.signal(runId, [{ type: 'rated.by', payload: {} }]) // expect-error
const viewer = createEngineClient<[], { pendingApprovals: typeof pendingApprovals }>({
  baseUrl: 'http://127.0.0.1:8787',
})
console.log((await viewer.project(runId, 'pendingApprovals')).value.items[0]?.title.length)
await viewer.project(runId, 'pendingApproval') // expect-error
