// Two builds of Skein compared in instructions per run, which do not move with the machine's
// load (CPU timing on 2 shared cores cannot resolve a change of a few percent; see decisions.md,
// "A workflow decide reads each node's state once, by position"). Each build runs in fresh
// processes under valgrind's callgrind, both builds of a pair at once: the peers bench's
// 10-step chain (`ten`, one run at a time), its fan-out/join 1 -> 16 -> 1 (`fan`) or the
// 3-step workflow at 16 in flight (`three`), on a SQLite file in /dev/shm (synchronous FULL),
// warmed up before callgrind starts counting (bench/instructions-child.mjs, plain JavaScript:
// a TypeScript loader's thread would add instructions of its own to the count). Copy `dist` of each
// build aside inside the checkout, where its imports find node_modules (`.skein/` is ignored by
// git): `npm run -s build && mkdir -p .skein && cp -r dist .skein/old-dist`, …, then:
//   node --import tsx bench/instructions-ab.ts .skein/old-dist .skein/new-dist [ten|fan|three]
//     [pairs (2)] [runs (200)] [warm-up runs (1500)]
// A pair takes about a minute for `ten`. Needs valgrind.
import { spawn } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { loadavg } from 'node:os'
import { join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { median } from './table.js'

type Kind = 'ten' | 'fan' | 'three'

/** Instructions per run of one build, in a fresh process under callgrind. */
function measure(dist: string, kind: Kind, runs: number, warm: number): Promise<number> {
  const out = mkdtempSync('/tmp/skein-callgrind-')
  const args = [
    '--tool=callgrind',
    '--instr-atstart=no',
    `--callgrind-out-file=${join(out, 'out')}`,
    process.execPath,
    fileURLToPath(new URL('./instructions-child.mjs', import.meta.url)),
    dist,
    kind,
    String(runs),
    String(warm),
  ]
  return new Promise((done, fail) => {
    const proc = spawn('valgrind', args, { stdio: ['ignore', 'ignore', 'pipe'] })
    let err = ''
    proc.stderr.on('data', (chunk) => {
      err += chunk
    })
    proc.on('error', fail)
    proc.on('exit', (code) => {
      rmSync(out, { recursive: true, force: true })
      const collected = /Collected : (\d+)/.exec(err)
      if (code !== 0 || !collected) fail(new Error(`valgrind exited ${code}: ${err.slice(-2000)}`))
      else done(Number(collected[1]) / runs)
    })
  })
}

{
  const [oldDist, newDist, kind = 'ten', pairs = '2', runs = '200', warm = '1500'] =
    process.argv.slice(2)
  if (!oldDist || !newDist) throw new Error('usage: instructions-ab.ts <old dist> <new dist> …')
  const load = [loadavg()[0]]
  const olds: number[] = []
  const news: number[] = []
  for (let i = 0; i < Number(pairs); i++) {
    const [o, n] = await Promise.all(
      [oldDist, newDist].map((d) => measure(resolve(d), kind as Kind, Number(runs), Number(warm))),
    )
    olds.push(o)
    news.push(n)
    console.log(
      `pair ${i + 1}: old ${Math.round(o)}, new ${Math.round(n)}, ratio ${(n / o).toFixed(4)}`,
    )
  }
  load.push(loadavg()[0])
  console.log(
    JSON.stringify({
      kind,
      pairs: Number(pairs),
      runs: Number(runs),
      oldInstructionsPerRun: Math.round(median(olds)),
      newInstructionsPerRun: Math.round(median(news)),
      ratio: Number((median(news) / median(olds)).toFixed(4)),
      load: load.map((x) => Number(x.toFixed(1))),
    }),
  )
}
