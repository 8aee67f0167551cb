// Several processes on one SQLite file: 3-step workflows started at 16 concurrent
// in each process, one process alone against two on one file (ownership on).
// Each process is a child started together behind a barrier; the figure is all runs over the
// wall time from the barrier to the last child's end.
import { type ChildProcess, spawn } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { createEngine, defineEffect, defineModule } from 'skein'
import { sqliteStore } from 'skein/sqlite'
import { defineWorkflow, workflow } from 'skein/workflow'
import { median, printRows, type Row } from './table.js'

const CONCURRENCY = 16

async function child(path: string, runs: number): Promise<void> {
  const step = defineModule({
    namespace: 'bench',
    effects: { step: defineEffect<{ i: number }, { i: number }>({ execute: async (x) => x }) },
  })
  const three = defineWorkflow({
    name: 'three',
    nodes: {
      s0: { run: (ctx: any) => ctx.invoke('bench.step', { i: 0 }) },
      s1: { after: ['s0'], run: (ctx: any) => ctx.invoke('bench.step', { i: 1 }) },
      s2: { after: ['s1'], run: (ctx: any) => ctx.invoke('bench.step', { i: 2 }) },
    },
  })
  const store = sqliteStore({ path })
  const engine = createEngine({
    store,
    modules: [workflow({ definitions: [three] }), step],
    ownership: {},
  })
  await engine.ready()
  process.stdout.write('ready\n')
  await new Promise<void>((resolve) => process.stdin.once('data', () => resolve()))
  let next = 0
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next < runs) {
        next++
        const { state } = await engine.start(three)
        if (state.status !== 'completed') throw new Error(`3-step run ended ${state.status}`)
      }
    }),
  )
  await engine.stop()
  await store.close()
  process.stdout.write('done\n')
  process.exit(0)
}

/** Starts `processes` children on one fresh file, releases them together; runs/s overall. */
async function round(dir: string, name: string, processes: number, runs: number) {
  const path = join(dir, `${name}.db`)
  // The file and its schema exist before the children race to open it.
  await sqliteStore({ path }).close()
  const children: ChildProcess[] = []
  const exits: Array<Promise<unknown>> = []
  const outputs: string[] = []
  for (let i = 0; i < processes; i++) {
    const proc = spawn(
      process.execPath,
      [...process.execArgv, fileURLToPath(import.meta.url), 'child', path, String(runs)],
      { stdio: ['pipe', 'pipe', 'inherit'] },
    )
    outputs.push('')
    proc.stdout?.on('data', (d) => (outputs[i] += d))
    exits.push(new Promise((resolve) => proc.on('exit', resolve)))
    children.push(proc)
  }
  const waitFor = (word: string) =>
    new Promise<void>((resolve, reject) => {
      const timer = setInterval(() => {
        if (outputs.every((o) => o.includes(word))) {
          clearInterval(timer)
          resolve()
        }
        if (children.some((c) => c.exitCode !== null && c.exitCode !== 0)) {
          clearInterval(timer)
          reject(new Error('a bench child failed'))
        }
      }, 2)
    })
  await waitFor('ready')
  const t0 = performance.now()
  for (const c of children) c.stdin?.end('go\n')
  await waitFor('done')
  const elapsed = performance.now() - t0
  await Promise.all(exits)
  return (processes * runs) / (elapsed / 1000)
}

export async function benchSqliteProcesses(): Promise<Row[]> {
  const dir = mkdtempSync(join(tmpdir(), 'skein-bench-procs-'))
  try {
    await round(dir, 'warm', 1, 200)
    const one: number[] = []
    const two: number[] = []
    for (let i = 0; i < 3; i++) {
      one.push(await round(dir, `one-${i}`, 1, 800))
      two.push(await round(dir, `two-${i}`, 2, 400))
    }
    const single = median(one)
    const pair = median(two)
    return [
      {
        name: `3-step workflow, ${CONCURRENCY} concurrent, 1 process (ownership on)`,
        value: single,
        unit: 'runs/s',
      },
      {
        name: `3-step workflow, ${CONCURRENCY} concurrent each, 2 processes on one file (same total)`,
        value: pair,
        unit: 'runs/s',
        baseline: single,
        ratio: pair / single,
      },
    ]
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

const [mode, path, runs] = process.argv.slice(2)
if (mode === 'child') await child(path, Number(runs))
else if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  printRows('engine on sqlite, processes on one file', await benchSqliteProcesses())
}
