// Fan-out: one node mapping 1,000 items to an effect each (`ctx.map`) against the same work as
// a static graph of 1,000 invoke nodes, on a SQLite file, both 16 at a time. Figures: events
// per item and time per item (medians of rounds), the static graph measured in the same run.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createEngine, defineEffect, defineModule } from 'skein'
import { sqliteStore } from 'skein/sqlite'
import { defineWorkflow, type WorkflowDefinition, workflow } from 'skein/workflow'
import { median, type Row } from './table.js'

const N = 1_000
const ROUNDS = 3
const CONCURRENCY = 16

const ship = defineEffect({ execute: async (input: { n: number }) => ({ shipped: input.n }) })
const orders = defineModule({ namespace: 'orders', effects: { ship } })
const items = Array.from({ length: N }, (_, n) => n)

const mapped = defineWorkflow({
  name: 'mapped',
  nodes: {
    ship: {
      run: (ctx) => ctx.map(items, (n) => ctx.invoke(ship, { n }), { concurrency: CONCURRENCY }),
    },
  },
})
const staticGraph = defineWorkflow({
  name: 'static',
  concurrency: CONCURRENCY,
  nodes: Object.fromEntries(
    items.map((n) => [`ship${n}`, { run: (ctx: any) => ctx.invoke(ship, { n }) }]),
  ),
}) as WorkflowDefinition

async function once(dir: string, def: WorkflowDefinition, round: number) {
  const store = sqliteStore({ path: join(dir, `${def.name}-${round}.db`) })
  const engine = createEngine({
    store,
    modules: [workflow({ definitions: [mapped, staticGraph] }), orders],
  })
  await engine.ready()
  const t0 = performance.now()
  const { runId, state } = await engine.start(def, undefined, { wait: 'settled' })
  const ms = performance.now() - t0
  if (state.status !== 'completed') throw new Error(`${def.name}: ${state.status}`)
  const events = (await engine.getEvents(runId, { limit: 100_000 })).length
  await engine.stop()
  return { ms, events }
}

export async function benchFanOut(): Promise<Row[]> {
  const dir = mkdtempSync(join(tmpdir(), 'skein-bench-fan-out-'))
  try {
    const map = { ms: [] as number[], events: 0 }
    const graph = { ms: [] as number[], events: 0 }
    for (let round = 0; round < ROUNDS; round++) {
      // Alternate which goes first, so neither always meets a warmer process.
      const order = round % 2 ? [graph, map] : [map, graph]
      for (const side of order) {
        const r = await once(dir, side === map ? mapped : staticGraph, round)
        side.ms.push(r.ms)
        side.events = r.events
      }
    }
    const perItem = (ms: number[]) => median(ms) / N
    const rows: Row[] = [
      {
        name: `ctx.map over ${N} items: time per item`,
        value: perItem(map.ms),
        unit: 'ms',
        baseline: perItem(graph.ms),
        ratio: perItem(map.ms) / perItem(graph.ms),
        note: `baseline: a static graph of ${N} invoke nodes; ${CONCURRENCY} at a time, SQLite file`,
      },
      {
        name: `ctx.map over ${N} items: events per item`,
        value: map.events / N,
        unit: 'events',
        baseline: graph.events / N,
        ratio: map.events / graph.events,
      },
    ]
    console.log(
      `SCORE fan-out items=${N} ms_per_item=${perItem(map.ms).toFixed(3)} static_ms_per_item=${perItem(graph.ms).toFixed(3)} ratio=${(perItem(map.ms) / perItem(graph.ms)).toFixed(2)} events_per_item=${(map.events / N).toFixed(2)} static_events_per_item=${(graph.events / N).toFixed(2)}`,
    )
    return rows
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}
