// A run that outlives its process. Each command below is a separate process on one SQLite file:
//
//   node --conditions=skein-source --import tsx examples/durable-review.ts start    # parks on a gate, exits
//   node --conditions=skein-source --import tsx examples/durable-review.ts inspect  # reads it back
//   node --conditions=skein-source --import tsx examples/durable-review.ts approve  # resumes, completes
//
// Options: --db <file> (default .skein/durable-review.db), --run-id <id> (default review-1),
// reject instead of approve.
import { mkdirSync } from 'node:fs'
import { dirname, resolve } from 'node:path'
import { parseArgs } from 'node:util'
import { createEngine } from 'skein'
import { approval, decision, pendingApprovals } from 'skein/approval'
import { sqliteStore } from 'skein/sqlite'
import { workflow } from 'skein/workflow'
import { demoEffects, review } from './demo-definitions.js'

const { positionals, values } = parseArgs({
  allowPositionals: true,
  options: {
    db: { type: 'string', default: '.skein/durable-review.db' },
    'run-id': { type: 'string', default: 'review-1' },
  },
})
const command = positionals[0] ?? 'start'
const runId = values['run-id']
const path = resolve(values.db)
mkdirSync(dirname(path), { recursive: true })

const store = sqliteStore({ path })
const engine = createEngine({
  store,
  modules: [workflow({ definitions: [review] }), approval(), demoEffects],
})

const pending = async () =>
  (await engine.project(runId, pendingApprovals)).items.filter((i) => i.status === 'pending')

async function main(): Promise<number> {
  const known = (await engine.listRuns()).includes(runId)
  switch (command) {
    case 'start': {
      if (known) {
        console.log(`run ${runId} already exists in ${path}; try "inspect" or "approve"`)
        return 0
      }
      const { state } = await engine.start(review, { topic: 'durable runs' }, { runId })
      const [gate] = await pending()
      console.log(`started ${runId} in ${path}: ${state.status}, parked on "${gate.title}"`)
      console.log(`approval ${gate.approvalId} is pending; this process now exits.`)
      console.log('next: run this script again with "inspect", then "approve" (or "reject")')
      return 0
    }
    case 'inspect': {
      if (!known) return missing()
      const state = await engine.getRun(runId)
      const events = await engine.getEvents(runId)
      console.log(`run ${runId}: ${state.status} (${events.length} events in ${path})`)
      for (const e of events) console.log(`  ${String(e.seq).padStart(3)}  ${e.type}`)
      for (const item of await pending()) console.log(`pending approval: ${item.approvalId}`)
      if (state.output !== undefined) console.log(`output: ${JSON.stringify(state.output)}`)
      return 0
    }
    case 'approve':
    case 'reject': {
      if (!known) return missing()
      const [gate] = await pending()
      if (!gate) {
        console.log(`run ${runId} has no pending approval: ${(await engine.getRun(runId)).status}`)
        return 0
      }
      const state = await engine.signal(runId, [decision(gate.approvalId, command)])
      console.log(`${command}d ${gate.approvalId}: run ${runId} is ${state.status}`)
      console.log(`output: ${JSON.stringify(state.output)}`)
      return 0
    }
    default:
      console.error(`unknown command "${command}": use start, inspect, approve or reject`)
      return 2
  }
}

function missing(): number {
  console.error(`no run ${runId} in ${path}: run "start" first`)
  return 1
}

try {
  process.exitCode = await main()
} catch (error) {
  console.error(error instanceof Error ? error.message : error)
  process.exitCode = 1
} finally {
  await engine.stop()
  await store.close()
}
