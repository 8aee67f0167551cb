// Two builds of Skein through the SQLite part of bench/worker.ts (4 worker processes of 16
// loops, a SQLite file, synchronous FULL), each in fresh processes, alternating which goes
// first: per pair effects/s and the engine process's CPU per run (medians of the rounds), then
// the medians of the per-pair ratios new/old and the load average. Copy `dist` of each build
// aside inside the checkout, where its imports find node_modules (`.skein/` is ignored by git):
// `npm run -s build && mkdir -p .skein && cp -r dist .skein/old-dist`, …, then:
//   node --import tsx bench/worker-ab.ts .skein/old-dist .skein/new-dist [pairs] [runs] [rounds]
import { spawnSync } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { loadavg, tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { median } from './table.js'
import { spawnWorker, WORKER_TOKEN } from './worker-child.js'

const PROCESSES = 4
const CONCURRENCY = 16

interface Sample {
  rate: number
  cpuMs: number
}

async function child(dist: string, runs: number, rounds: number): Promise<Sample> {
  const at = (file: string) => pathToFileURL(join(dist, file)).href
  const skein = await import(at('index.js'))
  const { sqliteStore } = await import(at('stores/sqlite/index.js'))
  const { defineWorkflow, workflow } = await import(at('modules/workflow/index.js'))
  const fx = skein.defineModule({
    namespace: 'bench',
    effects: { remote: skein.defineEffect({ execution: 'worker' }) },
  })
  const remote = defineWorkflow({
    name: 'bench-bench.remote',
    nodes: {
      a: { run: (ctx: any) => ctx.invoke('bench.remote', { n: 21 }) },
      b: { after: ['a'], run: ({ results }: any) => ({ got: results.a }) },
    },
  })
  const dir = mkdtempSync(join(tmpdir(), 'skein-worker-ab-'))
  const store = sqliteStore({ path: join(dir, 'worker.db') })
  const engine = skein.createEngine({
    store,
    modules: [workflow({ definitions: [remote] }), fx],
    worker: skein.httpWorkerQueue(),
    authorize: skein.bearerAuth({ worker: WORKER_TOKEN }),
  })
  const server = await engine.serve({ port: 0 })
  const procs = await Promise.all(
    Array.from({ length: PROCESSES }, () =>
      spawnWorker(server.url, CONCURRENCY, { skein: at('index.js') }),
    ),
  )
  /** Resolves when the run's log shows it finished (as bench/worker.ts waits). */
  const finished = async (runId: string): Promise<void> => {
    if ((await engine.getRun(runId)).status !== 'running') return
    await new Promise<void>((done) => {
      let stop: (() => void) | undefined
      let seen = false
      const onEvents = (events: ReadonlyArray<{ type: string }>) => {
        if (seen || !events.some((e) => e.type === 'runtime.run.completed')) return
        seen = true
        stop?.()
        done()
      }
      engine.subscribe(runId, onEvents).then(async (unsubscribe: () => void) => {
        stop = unsubscribe
        if (seen) unsubscribe()
        else if ((await engine.getRun(runId)).status !== 'running')
          onEvents([{ type: 'runtime.run.completed' }])
      })
    })
  }
  const round = async (): Promise<Sample> => {
    const t0 = performance.now()
    const cpu0 = process.cpuUsage()
    const started = await Promise.all(Array.from({ length: runs }, () => engine.start(remote)))
    await Promise.all(started.map((r: { runId: string }) => finished(r.runId)))
    const cpu = process.cpuUsage(cpu0)
    return {
      rate: runs / ((performance.now() - t0) / 1000),
      cpuMs: (cpu.user + cpu.system) / 1000 / runs,
    }
  }
  try {
    await round()
    const samples: Sample[] = []
    for (let i = 0; i < rounds; i++) samples.push(await round())
    return {
      rate: median(samples.map((s) => s.rate)),
      cpuMs: median(samples.map((s) => s.cpuMs)),
    }
  } finally {
    for (const proc of procs) proc.kill('SIGTERM')
    await server.close()
    await engine.stop()
    await store.close()
    rmSync(dir, { recursive: true, force: true })
  }
}

const args = process.argv.slice(2)
if (args[0] === '--child') {
  const sample = await child(args[1], Number(args[2]), Number(args[3]))
  console.log(JSON.stringify(sample))
} else {
  const [oldDist, newDist, pairs = '6', runs = '1000', rounds = '3'] = args
  if (!oldDist || !newDist) throw new Error('usage: worker-ab.ts <old dist> <new dist> [pairs]…')
  const self = fileURLToPath(import.meta.url)
  const measure = (dist: string): Sample => {
    const out = spawnSync(
      process.execPath,
      [...process.execArgv, self, '--child', resolve(dist), runs, rounds],
      { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] },
    )
    if (out.status !== 0) throw new Error(`child for ${dist} exited with ${out.status}`)
    return JSON.parse(out.stdout.trim().split('\n').at(-1) as string)
  }
  const rate: number[] = []
  const cpu: number[] = []
  const loads: number[] = []
  for (let pair = 1; pair <= Number(pairs); pair++) {
    loads.push(loadavg()[0])
    const oldFirst = pair % 2 === 1
    const first = measure(oldFirst ? oldDist : newDist)
    const second = measure(oldFirst ? newDist : oldDist)
    const [a, b] = oldFirst ? [first, second] : [second, first]
    rate.push(b.rate / a.rate)
    cpu.push(b.cpuMs / a.cpuMs)
    console.log(
      `pair ${pair}: effects/s ${a.rate.toFixed(0)} → ${b.rate.toFixed(0)}, CPU per run ${a.cpuMs.toFixed(3)} → ${b.cpuMs.toFixed(3)} ms, load ${loads.at(-1)?.toFixed(1)}`,
    )
  }
  const range = (xs: number[]) => `${Math.min(...xs).toFixed(2)}–${Math.max(...xs).toFixed(2)}`
  console.log(
    `new/old paired medians over ${pairs} pairs: effects/s ${median(rate).toFixed(3)} (${range(rate)}), CPU per run ${median(cpu).toFixed(3)} (${range(cpu)}); load average ${Math.min(...loads).toFixed(1)}–${Math.max(...loads).toFixed(1)}`,
  )
}
