import { spawn } from 'node:child_process'
import { join } from 'node:path'
import { expect, it } from 'vitest'
import { childWithin, tail } from '../support/children.js'

// A run's objects must die young. A structure that keeps a finished run reachable from the old
// generation, even only until the next full collection, makes every young collection copy and
// promote it: a wake-pass result built as an object literal with a getter did that (each such
// literal gets a map of its own in old space, whose getter closure held the run's fold), and so
// does, on Node 20, an object spread that adds a key (decisions.md, "No per-object getters or
// spread-then-add on hot paths"). The child runs 3-step workflows one at a time, so at any young
// collection at most one run is live; V8 prints what each collection promoted.

const child = join(import.meta.dirname, 'gc-survival-child.ts')

function promotedPerScavenge(runs: number): Promise<number[]> {
  const proc = spawn(
    process.execPath,
    ['--trace-gc-nvp', '--conditions=skein-source', '--import', 'tsx', child, String(runs)],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  )
  let out = ''
  let err = ''
  proc.stdout.on('data', (d) => (out += d))
  proc.stderr.on('data', (d) => (err += d))
  const watched = { name: 'the gc child', proc, output: () => `${tail(out, 500)}\n${err}` }
  const done = new Promise<number[]>((resolve, reject) => {
    proc.on('error', reject)
    proc.on('exit', (code) => {
      if (code !== 0 || !out.includes('done')) {
        reject(new Error(`child exited ${code}: ${err.slice(-2000)}`))
        return
      }
      const promoted = out
        .split('\n')
        .filter((line) => / gc=s /.test(line))
        .map((line) => Number(/ promoted=(\d+)/.exec(line)?.[1]))
      resolve(promoted)
    })
  })
  return childWithin(`${runs} runs in the gc child`, watched, done, 45_000)
}

it('a finished run leaves nothing for young collections to promote', async () => {
  const promoted = await promotedPerScavenge(6000)
  // The first collections run while modules load and code warms up.
  const steady = promoted.slice(Math.floor(promoted.length / 2))
  expect(steady.length).toBeGreaterThanOrEqual(3)
  const mean = steady.reduce((a, b) => a + b, 0) / steady.length
  // ~0 now; ~500 KB per collection with the leak.
  expect(mean).toBeLessThan(64 * 1024)
}, 60_000)
