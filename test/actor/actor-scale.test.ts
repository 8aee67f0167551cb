import { mkdtempSync, readdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createActorHost, sqliteCells } from 'skein/actor'
import { afterAll, describe, expect, it } from 'vitest'
import { freshDir } from '../support/temp-dirs.js'
import { actorModules } from './actor-workload.js'

// Many runs, a small working set: at most maxOpenCells cells are open at once, so memory and
// file descriptors stay bounded however many runs the directory holds. Figures printed; the
// count is SKEIN_ACTOR_SCALE_RUNS (CI default below: 2,000 runs, about 40 s on a loaded 2-core
// machine; the 100,000 figure is the bench's, SKEIN_BENCH_ACTOR_RUNS=100000 npm run bench -- actor,
// recorded in docs/performance.md).

const RUNS = Number(process.env.SKEIN_ACTOR_SCALE_RUNS ?? 2000)
const MAX_OPEN = 256
const dir = mkdtempSync(join(tmpdir(), 'skein-actor-scale-'))
// Thousands of files take a while to delete.
afterAll(() => rmSync(dir, { recursive: true, force: true }), 300_000)

const openFds = () => readdirSync('/proc/self/fd').length
const rssMb = () => process.memoryUsage().rss / 2 ** 20

describe('actor host: many runs, bounded cells', () => {
  it.skipIf(process.platform !== 'linux')(
    `${RUNS} runs created with at most ${MAX_OPEN} cells open: RSS and fds stay bounded`,
    async () => {
      const at = freshDir(dir)
      const host = createActorHost({
        modules: actorModules(),
        dir: at,
        // 'normal': a process crash loses nothing; the figure is about cells, not fsyncs.
        cells: sqliteCells({ dir: at, synchronous: 'normal' }),
        maxOpenCells: MAX_OPEN,
      })
      try {
        const baseFds = openFds()
        const samples: Array<{ runs: number; rss: number; fds: number; open: number }> = []
        let mostOpen = 0
        const started = Date.now()
        for (let i = 0; i < RUNS; i++) {
          const res = await host.fetch(
            new Request('http://actor.test/runs', {
              method: 'POST',
              headers: { 'content-type': 'application/json' },
              body: JSON.stringify({
                kind: 'workflow',
                definitionName: 'nap',
                runId: `s-${i}`,
                input: { ms: 3_600_000 },
              }),
            }),
          )
          if (res?.status !== 200)
            throw new Error(`start ${i}: ${res?.status} ${await res?.text()}`)
          mostOpen = Math.max(mostOpen, host.openCells())
          if ((i + 1) % Math.max(1, Math.floor(RUNS / 6)) === 0 || i === MAX_OPEN * 2) {
            samples.push({
              runs: i + 1,
              rss: rssMb(),
              fds: openFds() - baseFds,
              open: host.openCells(),
            })
          }
        }
        const seconds = (Date.now() - started) / 1000
        const afterWarm = samples.find((s) => s.runs > MAX_OPEN * 2) ?? samples[0]
        const last = samples.at(-1)!
        for (const s of samples) {
          console.log(
            `actor-scale runs=${s.runs} open_cells=${s.open} rss_mb=${s.rss.toFixed(0)} extra_fds=${s.fds}`,
          )
        }
        console.log(
          `SCORE actor-scale runs=${RUNS} max_open_cells=${mostOpen} rss_mb_first=${afterWarm!.rss.toFixed(0)} rss_mb_last=${last.rss.toFixed(0)} extra_fds_max=${Math.max(...samples.map((s) => s.fds))} runs_per_s=${(RUNS / seconds).toFixed(0)}`,
        )
        expect(mostOpen).toBeLessThanOrEqual(MAX_OPEN)
        // Two fds per open cell (the file and its WAL; no -shm in exclusive mode), plus a few.
        expect(Math.max(...samples.map((s) => s.fds))).toBeLessThanOrEqual(MAX_OPEN * 2 + 32)
        // Memory does not grow with the runs once the working set is full (generous: GC timing).
        expect(last.rss).toBeLessThan(afterWarm!.rss * 1.5 + 64)
        expect(readdirSync(join(at, 'runs')).filter((f) => f.endsWith('.sqlite'))).toHaveLength(
          RUNS,
        )
      } finally {
        await host.stop()
      }
    },
    Math.max(600_000, RUNS * 150),
  )
})
