// Two builds of Skein in one process, alternating rounds of the peers bench's fan-out/join or
// 10-step chain (bench/profile-peers.ts) on a SQLite file each (synchronous FULL): CPU per run
// per round, and the median of the per-round ratios new/old. Copy `dist` of each build aside
// first (`npm run -s build && cp -r dist /tmp/old-dist`, …), then:
//   node --import tsx bench/profile-peers-ab.ts <old dist> <new dist> [fan|ten] [runs] [rounds]
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { chainNodes, fanNodes } from './peers/skein-shapes.js'

const [oldDist, newDist, kind = 'ten', roundRuns = '150', rounds = '16'] = process.argv.slice(2)
if (!oldDist || !newDist) throw new Error('usage: profile-peers-ab.ts <old dist> <new dist> …')

interface Build {
  once(): Promise<void>
  close(): Promise<void>
  cpu: number[]
  wall: number[]
}

async function load(dist: string): Promise<Build> {
  const root = resolve(dist)
  const skein = await import(join(root, 'index.js'))
  const { sqliteStore } = await import(join(root, 'stores/sqlite/index.js'))
  const { defineWorkflow, workflow } = await import(join(root, 'modules/workflow/index.js'))
  const bench = skein.defineModule({
    namespace: 'bench',
    effects: { step: skein.defineEffect({ execute: async (input: unknown) => input }) },
  })
  const nodes = kind === 'fan' ? fanNodes() : chainNodes(10)
  const def = defineWorkflow({ name: kind, concurrency: kind === 'fan' ? 16 : undefined, nodes })
  const dir = mkdtempSync(join(tmpdir(), 'skein-profile-ab-'))
  const store = sqliteStore({ path: join(dir, 'runs.db') })
  const engine = skein.createEngine({ store, modules: [workflow({ definitions: [def] }), bench] })
  await engine.ready()
  return {
    async once() {
      const { state } = await engine.start(def)
      if (state.status !== 'completed') throw new Error(`run ended ${state.status}`)
    },
    async close() {
      await engine.stop()
      await store.close()
      rmSync(dir, { recursive: true, force: true })
    },
    cpu: [],
    wall: [],
  }
}

const old = await load(oldDist)
const next = await load(newDist)
for (let i = 0; i < 600; i++) {
  await old.once()
  await next.once()
}
const runs = Number(roundRuns)
for (let r = 0; r < Number(rounds); r++) {
  // Each build goes first in every other round.
  for (const build of r % 2 ? [next, old] : [old, next]) {
    const cpu0 = process.cpuUsage()
    const t0 = performance.now()
    for (let i = 0; i < runs; i++) await build.once()
    const cpu = process.cpuUsage(cpu0)
    build.cpu.push((cpu.user + cpu.system) / runs)
    build.wall.push(((performance.now() - t0) * 1000) / runs)
  }
}
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1]
const ratios = next.cpu.map((x, i) => x / old.cpu[i])
console.log(
  JSON.stringify({
    kind,
    rounds: Number(rounds),
    runsPerRound: runs,
    oldCpuUs: Math.round(median(old.cpu)),
    newCpuUs: Math.round(median(next.cpu)),
    cpuRatioMedian: Number(median(ratios).toFixed(3)),
    newFaster: ratios.filter((x) => x < 1).length,
    cpuRatios: ratios.map((x) => Number(x.toFixed(2))),
    wallRatioMedian: Number(median(next.wall.map((x, i) => x / old.wall[i])).toFixed(3)),
  }),
)
await old.close()
await next.close()
