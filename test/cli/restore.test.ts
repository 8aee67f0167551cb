import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { bearerAuth, defineEffect, defineModule, jsonlArchive } from 'skein'
import { sqliteStore } from 'skein/sqlite'
import { manualClock } from 'skein/testing'
import { defineWorkflow, workflow } from 'skein/workflow'
import { afterAll, describe, expect, it } from 'vitest'
import { runCli } from '../../src/cli/index.js'
import { enginesStoppedAfterEach } from '../support/engines.js'
import { untilSwept } from '../support/swept.js'
import { freshDir } from '../support/temp-dirs.js'

// `skein restore` (docs/cli.md): archived runs back into a server's store over a real socket,
// through POST /operations/restore with an operations token.

const newEngine = enginesStoppedAfterEach()
const dir = mkdtempSync(join(tmpdir(), 'skein-cli-restore-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

const fx = defineModule({
  namespace: 'cr',
  effects: { step: defineEffect<{ n: number }, number>({ execute: async ({ n }) => n + 1 }) },
})
const job = defineWorkflow({
  name: 'job',
  nodes: { a: { run: (ctx) => ctx.invoke('cr.step', { n: 1 }) } },
})

const cli = async (args: string[]) => {
  let stdout = ''
  let stderr = ''
  const code = await runCli(args, {
    stdout: { write: (t: string) => (stdout += t) },
    stderr: { write: (t: string) => (stderr += t) },
  })
  return { code, stdout, stderr }
}

describe('skein restore', () => {
  it('restores every run of an archive directory; again, nothing is written; a bad file is refused by name', async () => {
    const clock = manualClock()
    const at = freshDir(dir)
    const archive = join(at, 'archive')
    const engine = newEngine({
      store: sqliteStore({ path: join(at, 'runs.db') }),
      modules: [fx, workflow({ definitions: [job] })],
      clock,
      authorize: bearerAuth({ operations: 'ops-token' }),
      retention: {
        finishedAfterMs: 1000,
        intervalMs: 500,
        archive: jsonlArchive({ dir: archive }),
      },
    })
    const logs = new Map<string, unknown>()
    for (const runId of ['one', 'two', 'three']) {
      await engine.start(job, undefined, { runId, wait: 'settled' })
      logs.set(runId, await engine.getEvents(runId))
    }
    await clock.advance(2000)
    await untilSwept(engine, clock, 3)
    const server = await engine.serve({ port: 0 })
    const base = ['--url', server.url, '--token', 'ops-token']

    const noToken = await cli(['restore', archive, '--url', server.url])
    expect(noToken.code).not.toBe(0)
    expect(noToken.stdout).toMatch(/refused one/)

    const first = await cli(['restore', archive, ...base])
    expect(first.stderr).toBe('')
    expect(first.code).toBe(0)
    expect(first.stdout).toMatch(/restored one \(\d+ event\(s\), completed\)/)
    for (const [runId, events] of logs) expect(await engine.getEvents(runId)).toEqual(events)

    const again = await cli(['restore', archive, '--run', 'two', '--json', ...base])
    expect(again.code).toBe(0)
    expect(JSON.parse(again.stdout).results).toEqual([
      expect.objectContaining({ runId: 'two', restored: false }),
    ])

    const bad = join(at, 'bad.jsonl.gz')
    writeFileSync(bad, 'not gzip')
    const refused = await cli(['restore', bad, ...base])
    expect(refused.code).toBe(1)
    expect(refused.stderr).toMatch(/bad\.jsonl\.gz is not a gzip archive/)
    const missing = await cli(['restore', join(at, 'nowhere'), ...base])
    expect(missing.stderr).toMatch(/not found/)
  })
})
