// The smoke version of `npm run bench:peers` that CI runs: one round of tiny workloads on Skein
// on SQLite, through the same driver, child processes, kill -9 and restart as the full bench.
// It checks that every workload runs to the end and prints a figure; it asserts no timing.
import { spawnSync } from 'node:child_process'
import { expect, it } from 'vitest'

it('bench:peers --smoke runs every workload on Skein (SQLite) and prints every figure', () => {
  const child = spawnSync(
    process.execPath,
    ['--conditions=skein-source', '--import', 'tsx', 'bench/peers.ts', '--smoke'],
    {
      encoding: 'utf8',
      env: { ...process.env, SKEIN_PEER_ENGINES: 'skein-sqlite' },
      timeout: 170_000,
    },
  )
  expect(child.stderr).not.toMatch(/Error/)
  expect(child.status).toBe(0)
  const rows = child.stdout.split('\n').filter((line) => /^\| \d\. /.test(line))
  expect(rows).toHaveLength(17)
  for (const row of rows) {
    const value = row.split('|')[2].trim()
    expect(value, row).toMatch(/^[\d,.]+$/)
  }
}, 180_000)
