// Engine throughput on SQLite (synchronous FULL, 16 concurrent 3-step workflows) with 0, 1
// and 3 post-commit projectors attached (target >= 0.8 of the bare engine with 3).
// Projectors run off the commit path in the same process, so what they cost the engine is the
// CPU their reads of the feed and their handlers take. The 3 are: the SQLite run index (a
// write transaction per run batch) and two counters. Configurations are interleaved round by
// round (fresh file each) and each figure is a median.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import {
  createEngine,
  defineEffect,
  defineModule,
  defineProjector,
  type ProjectorDefinition,
} from 'skein'
import { sqliteRunIndex, sqliteStore } from 'skein/sqlite'
import { defineWorkflow, workflow } from 'skein/workflow'
import { median, type Row } from './table.js'

const now = () => performance.now()
const CONCURRENCY = 16
const RUNS = 1500
const ROUNDS = 5

const fx = defineModule({
  namespace: 'bench',
  effects: { step: defineEffect<{ i: number }, { i: number }>({ execute: async (x) => x }) },
})
const three = defineWorkflow({
  name: 'three',
  nodes: {
    s0: { run: (ctx) => ctx.invoke('bench.step', { i: 0 }) },
    s1: { after: ['s0'], run: (ctx) => ctx.invoke('bench.step', { i: 1 }) },
    s2: { after: ['s1'], run: (ctx) => ctx.invoke('bench.step', { i: 2 }) },
  },
})

/** Events each counter was handed, by projector name (checked after every round). */
const handled = new Map<string, number>()
const counter = (name: string) =>
  defineProjector({
    name,
    handle({ events }) {
      handled.set(name, (handled.get(name) ?? 0) + events.length)
    },
  })

/** Runs/s of the engine with `count` projectors, and how long they took to catch up after. */
async function round(
  path: string,
  count: 0 | 1 | 3,
): Promise<{ runsPerSec: number; catchUpMs: number }> {
  const store = sqliteStore({ path })
  const index = count > 0 ? sqliteRunIndex({ store }) : undefined
  const projectors: ProjectorDefinition[] = []
  if (index) projectors.push(index.projector)
  if (count === 3) projectors.push(counter('count-a'), counter('count-b'))
  const engine = createEngine({
    store,
    modules: [workflow({ definitions: [three] }), fx],
    projectors,
  })
  await engine.ready()
  let next = 0
  const t0 = now()
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next < RUNS) {
        next++
        const { state } = await engine.start(three)
        if (state.status !== 'completed') throw new Error(`run ended ${state.status}`)
      }
    }),
  )
  const elapsed = now() - t0
  const t1 = now()
  while (count > 0 && (await engine.projectors()).some((p) => p.lagEvents > 0)) {
    await new Promise((r) => setTimeout(r, 2))
  }
  const catchUpMs = now() - t1
  if (count === 3 && !(handled.get('count-a')! > 0 && handled.get('count-b')! > 0)) {
    throw new Error('a counter was handed nothing')
  }
  handled.clear()
  if (index) {
    let indexed = 0
    let cursor: string | undefined
    do {
      const page = await index.list({ status: 'completed', limit: 1000, cursor })
      indexed += page.runs.length
      cursor = page.nextCursor ?? undefined
    } while (cursor)
    if (indexed !== RUNS) throw new Error(`the run index holds ${indexed} of ${RUNS} runs`)
  }
  await engine.stop()
  await index?.close?.()
  await store.close()
  return { runsPerSec: (RUNS / elapsed) * 1000, catchUpMs }
}

export async function benchProjectors(): Promise<Row[]> {
  const dir = mkdtempSync(join(tmpdir(), 'skein-bench-projectors-'))
  let file = 0
  const db = () => join(dir, `p${++file}.db`)
  try {
    for (const count of [0, 1, 3] as const) await round(db(), count) // warm-up
    const figures = { 0: [] as number[], 1: [] as number[], 3: [] as number[] }
    const catchUp = { 1: [] as number[], 3: [] as number[] }
    for (let r = 0; r < ROUNDS; r++) {
      for (const count of [0, 1, 3] as const) {
        const result = await round(db(), count)
        figures[count].push(result.runsPerSec)
        if (count !== 0) catchUp[count].push(result.catchUpMs)
      }
    }
    const base = median(figures[0])
    const row = (count: 1 | 3, target?: number): Row => ({
      name: `3-step runs/s, ${count} projector${count > 1 ? 's' : ''} (run index${count > 1 ? ' + 2 counters' : ''})`,
      value: median(figures[count]),
      unit: 'runs/s',
      baseline: base,
      ratio: median(figures[count]) / base,
      target,
    })
    return [
      { name: '3-step runs/s, no projector', value: base, unit: 'runs/s' },
      row(1),
      row(3, 0.8),
      {
        name: 'catch-up after the last run, 1 projector (median)',
        value: median(catchUp[1]),
        unit: 'ms',
      },
      {
        name: 'catch-up after the last run, 3 projectors (median)',
        value: median(catchUp[3]),
        unit: 'ms',
      },
    ]
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}
