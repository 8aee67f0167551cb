import { execFileSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import { cp, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { checkGoldenLogs, parseLog, replayLog } from 'skein/testing'
import { afterEach, describe, expect, it } from 'vitest'
import { LOG_PROTOCOL_VERSION } from '../../src/core/fold/index.js'
import { goldenModules } from '../fixtures/logs/golden-modules.js'

const fixtures = fileURLToPath(new URL('../fixtures/logs', import.meta.url))
const scratch: string[] = []
afterEach(async () => {
  await Promise.all(scratch.splice(0).map((dir) => rm(dir, { recursive: true, force: true })))
})

/** A copy of some golden logs to tamper with. */
async function copyOf(...names: string[]): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'skein-golden-'))
  scratch.push(dir)
  for (const name of names) {
    for (const suffix of ['.jsonl', '.expected.json']) {
      await cp(join(fixtures, name + suffix), join(dir, name + suffix))
    }
  }
  return dir
}

describe('golden logs', () => {
  it('every recorded log replays to what it folded to when it was recorded', async () => {
    const report = await checkGoldenLogs(fixtures, goldenModules())
    console.log(`SCORE replay logs=${report.logs} mismatches=${report.mismatches.length}`)
    for (const mismatch of report.mismatches) console.error(mismatch.message)
    expect(report.mismatches).toEqual([])
    expect(report.logs).toBeGreaterThanOrEqual(36)
  })

  it('the unversioned logs predate the protocol version; the others record the one they were written in', async () => {
    const names = (await readdir(fixtures, { recursive: true })).filter((n) => n.endsWith('.jsonl'))
    for (const name of names) {
      const [first] = parseLog(await readFile(join(fixtures, name), 'utf8'))
      // A trimmed log starts after its snapshot, which carries the version instead.
      const snapshot = join(fixtures, name.replace(/\.jsonl$/, '.snapshot.json'))
      const version = existsSync(snapshot)
        ? JSON.parse(await readFile(snapshot, 'utf8')).data.protocol
        : (first.payload as any).protocolVersion
      if (name.startsWith('unversioned/')) expect(version, name).toBeUndefined()
      else expect(version, name).toBeLessThanOrEqual(LOG_PROTOCOL_VERSION)
    }
  })

  it('a log that folds differently is reported with the path, the recorded and the replayed value', async () => {
    const dir = await copyOf('unversioned/approval')
    const path = join(dir, 'unversioned/approval.jsonl')
    const lines = (await readFile(path, 'utf8'))
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l))
    const decided = lines.find((e) => e.type === 'approval.decided')
    decided.payload.outcome = 'approve'
    await writeFile(path, lines.map((e) => JSON.stringify(e)).join('\n'))
    const report = await checkGoldenLogs(dir, goldenModules())
    expect(report.logs).toBe(1)
    expect(report.mismatches).toHaveLength(1)
    const [mismatch] = report.mismatches
    expect(mismatch.name).toBe('unversioned/approval')
    expect(mismatch.path).toBe('projections.pendingApprovals.items.0.status')
    expect([mismatch.recorded, mismatch.replayed]).toEqual(['rejected', 'approved'])
    expect(mismatch.message).toContain('never to accept a change of how old logs replay')
  })

  it('a log the current code cannot fold, or one without an expectation, is a mismatch', async () => {
    const dir = await copyOf('unversioned/workflow-gate', 'unversioned/evaluator')
    const gate = join(dir, 'unversioned/workflow-gate.jsonl')
    const lines = (await readFile(gate, 'utf8')).trim().split('\n')
    await writeFile(gate, [...lines.slice(0, 3), ...lines.slice(4)].join('\n'))
    await rm(join(dir, 'unversioned/evaluator.expected.json'))
    const report = await checkGoldenLogs(dir, goldenModules())
    const byName = Object.fromEntries(report.mismatches.map((m) => [m.name, m]))
    expect(byName['unversioned/workflow-gate'].path).toBe('replay')
    expect(byName['unversioned/workflow-gate'].message).toContain('has a gap')
    expect(byName['unversioned/evaluator'].path).toBe('expected')
  })

  it('replayLog refuses a log that does not start where its snapshot (or seq 1) ends', async () => {
    const read = async (name: string) =>
      parseLog(await readFile(join(fixtures, `${name}.jsonl`), 'utf8'))
    const trimmed = await read('trimmed')
    expect(() => replayLog(goldenModules(), trimmed)).toThrow(/starts at seq 10/)
    const gate = await read('workflow-gate')
    expect(() => replayLog(goldenModules(), gate.slice(2))).toThrow(/starts at seq 3/)
  })

  it('the replay helpers load without vitest (any app can import them)', () => {
    const hook = `export async function resolve(s, c, next) {
      if (s === 'vitest' || s.startsWith('vitest/')) throw new Error('imported ' + s)
      return next(s, c)
    }`
    const refuseVitest = `data:text/javascript,${encodeURIComponent(hook)}`
    const program = `
      import { register } from 'node:module'
      register(${JSON.stringify(refuseVitest)})
      const golden = await import('./src/testing/golden-logs.ts')
      const replay = await import('./src/testing/replay-log.ts')
      console.log(typeof golden.checkGoldenLogs, typeof replay.replayLog)
    `
    const root = fileURLToPath(new URL('../..', import.meta.url))
    const out = execFileSync(
      process.execPath,
      ['--conditions=skein-source', '--import', 'tsx', '--input-type=module', '-e', program],
      // Bounded: a hung child would block this worker (no test timeout fires in a sync call).
      { cwd: root, encoding: 'utf8', timeout: 20_000, killSignal: 'SIGKILL' },
    )
    expect(out.trim()).toBe('function function')
  })
})
