import { commands, type Definition, defineKind, defineModule } from 'skein'
import { manualClock } from 'skein/testing'
import { defineWorkflow, workflow } from 'skein/workflow'
import { describe, expect, it } from 'vitest'
import { runCli } from '../../src/cli/index.js'
import { compareVersions } from '../../src/core/version-order.js'
import { enginesStoppedAfterEach } from '../support/engines.js'

const newEngine = enginesStoppedAfterEach()

const release = (version: string, extra: { default?: boolean } = {}) =>
  defineWorkflow({ name: 'release', version, ...extra, nodes: { n: { run: () => version } } })

/** A custom kind that spawns `workflow:release` by name, without a version. */
const spawner = defineModule({
  namespace: 'spawner',
  kinds: {
    spawner: defineKind<null>({
      initialState: () => null,
      decide: (_s, ctx) => {
        const child = ctx.outcome('child')
        if (child.status === 'completed') return [commands.complete(child.value)]
        return [commands.spawn({ kind: 'workflow', name: 'release' }, null, { key: 'child' })]
      },
    }),
  },
  definitions: [{ kind: 'spawner', name: 'spawn-release', version: 'v1' }],
})

const permutations = <T>(list: T[]): T[][] =>
  list.length <= 1
    ? [list]
    : list.flatMap((item, i) =>
        permutations([...list.slice(0, i), ...list.slice(i + 1)]).map((rest) => [item, ...rest]),
      )

const engineWith = (definitions: Definition[]) =>
  newEngine({
    modules: [workflow({ definitions: definitions as any }), spawner],
    clock: manualClock(),
  })

describe('which version a start without one gets', () => {
  it('orders versions numerically by their digit runs, whatever the locale', () => {
    const ordered = ['v1', 'v2', 'v10', 'v10.1', 'v11']
    expect([...ordered].reverse().sort(compareVersions)).toEqual(ordered)
    expect(['1.10.0', '1.9.0', '1.9.10', '0.9'].sort(compareVersions)).toEqual([
      '0.9',
      '1.9.0',
      '1.9.10',
      '1.10.0',
    ])
    expect(['2024-11-01', '2024-02-01'].sort(compareVersions)).toEqual(['2024-02-01', '2024-11-01'])
    expect(compareVersions('v01', 'v1')).not.toBe(0) // equal by number: plain string order decides
    expect(compareVersions('1.x', '1.0')).toBeGreaterThan(0)
    expect(compareVersions('99999999999999999999', '100000000000000000000')).toBeLessThan(0)
  })

  it('startRun picks the highest version, in any registration order', async () => {
    for (const order of permutations(['v1', 'v2', 'v10'])) {
      const engine = engineWith(order.map((v) => release(v)))
      const { state } = await engine.startRun({ kind: 'workflow', definitionName: 'release' })
      expect(state.definitionVersion, `registered ${order.join(', ')}`).toBe('v10')
      expect(state.output).toEqual({ n: 'v10' })
    }
  })

  it('a definition marked default: true wins, in any registration order', async () => {
    for (const order of permutations(['v1', 'v2', 'v10'])) {
      const engine = engineWith(order.map((v) => release(v, { default: v === 'v2' })))
      const { state } = await engine.startRun({ kind: 'workflow', definitionName: 'release' })
      expect(state.definitionVersion, `registered ${order.join(', ')}`).toBe('v2')
    }
  })

  it('two versions marked default fail composition, naming both', () => {
    const error = (() => {
      try {
        engineWith([release('v1', { default: true }), release('v2', { default: true })])
      } catch (e) {
        return e as any
      }
    })()
    expect(error?.code).toBe('MODULE_COMPOSITION')
    expect(error.message).toContain('workflow:release@v1')
    expect(error.message).toContain('workflow:release@v2')
  })

  it('an explicit version is exact; an unknown one is DEFINITION_NOT_FOUND', async () => {
    const engine = engineWith([release('v10'), release('v2')])
    const { state } = await engine.startRun({
      kind: 'workflow',
      definitionName: 'release',
      definitionVersion: 'v2',
    })
    expect(state.definitionVersion).toBe('v2')
    const missing = await engine
      .startRun({ kind: 'workflow', definitionName: 'release', definitionVersion: 'v3' })
      .catch((e) => e)
    expect(missing.code).toBe('DEFINITION_NOT_FOUND')
  })

  it('the same rule for POST /runs, spawn by name and `skein start`', async () => {
    const engine = engineWith([release('v10'), release('v9'), release('v1')])
    const response = (await engine.fetch(
      new Request('http://skein.test/runs', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ kind: 'workflow', definitionName: 'release' }),
      }),
    ))!
    expect(response.status).toBe(200)
    expect((await response.json()).state.definitionVersion).toBe('v10')

    const spawned = await engine.startRun({ kind: 'spawner', definitionName: 'spawn-release' })
    expect(spawned.state.status).toBe('completed')
    const child = Object.values(spawned.state.threads).find((t) => t.kind === 'workflow')
    expect(child?.definitionVersion).toBe('v10')

    const server = await engine.serve({ port: 0 })
    let stdout = ''
    const code = await runCli(['start', 'workflow', 'release', '--json'], {
      stdout: { write: (t: string) => void (stdout += t) },
      stderr: { write: () => {} },
      env: { SKEIN_URL: server.url },
    })
    expect(code).toBe(0)
    expect(JSON.parse(stdout).state.definitionVersion).toBe('v10')
  })
})
