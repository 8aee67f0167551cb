import { spawnSync } from 'node:child_process'
import { copyFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join, resolve } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { importCycles, importGraph } from './import-graph.js'

// The layers (docs/architecture.md, The layers): core ← runtime ← http ← facade ← cli; stores, workers and modules
// import only core; the client imports only core and the wire format both sides speak. Lint
// (biome.json, noRestrictedImports) enforces it; these tests prove each rule fires, and check
// the real import graph against the same table independently of the linter.

/** Each probe: a file in a layer, one import, and whether the layer may make it. */
const PROBES: Array<[file: string, statement: string, allowed: boolean]> = [
  ['src/core/p.ts', "import { x } from '../runtime/engine.js'", false],
  ['src/core/p.ts', "import { x } from 'node:fs'", false],
  ['src/core/p.ts', "import { x } from './json.js'", true],
  ['src/runtime/p.ts', "import { x } from '../http/handler.js'", false],
  ['src/runtime/p.ts', "export { x } from '../http/authorize.js'", false],
  ['src/runtime/p.ts', "import { x } from '../stores/memory/memory-store.js'", false],
  ['src/runtime/p.ts', "import { x } from '../create-engine.js'", false],
  ['src/runtime/p.ts', "import { x } from '../workers/worker-queue.js'", false],
  ['src/runtime/p.ts', "import { x } from '../modules/workflow/index.js'", false],
  ['src/runtime/p.ts', "import { x } from '../core/fold/index.js'", true],
  ['src/runtime/p.ts', "import { x } from './batch.js'", true],
  ['src/runtime/ownership/p.ts', "import { x } from '../../http/handler.js'", false],
  ['src/runtime/ownership/p.ts', "import { x } from '../../stores/memory/memory-store.js'", false],
  ['src/runtime/ownership/p.ts', "import { x } from '../../core/ports.js'", true],
  ['src/runtime/ownership/p.ts', "import { x } from '../context.js'", true],
  ['src/http/p.ts', "import { x } from '../create-engine.js'", false],
  ['src/http/p.ts', "import { x } from '../index.js'", false],
  ['src/http/p.ts', "import { x } from '../engine-options.js'", false],
  ['src/http/p.ts', "import { x } from '../modules/approval/index.js'", false],
  ['src/http/p.ts', "import { x } from '../stores/memory/memory-store.js'", false],
  ['src/http/p.ts', "import { x } from '../client/index.js'", false],
  ['src/http/p.ts', "import { x } from '../cli/index.js'", false],
  ['src/http/p.ts', "import { x } from '../runtime/engine-types.js'", true],
  ['src/http/p.ts', "import { x } from '../workers/worker-queue.js'", true],
  ['src/http/p.ts', "import { x } from './wire/status.js'", true],
  ['src/http/routes/p.ts', "import { x } from '../../create-engine.js'", false],
  ['src/http/routes/p.ts', "import { x } from '../../runtime/engine-types.js'", true],
  ['src/http/routes/p.ts', "import { x } from '../error-response.js'", true],
  ['src/http/wire/p.ts', "import { x } from '../error-response.js'", false],
  ['src/http/wire/p.ts', "import { x } from '../../runtime/engine-types.js'", false],
  ['src/http/wire/p.ts', "import { x } from '../../core/errors.js'", true],
  ['src/http/wire/p.ts', "import { x } from './status.js'", true],
  ['src/client/p.ts', "import type { x } from '../runtime/engine-types.js'", false],
  ['src/client/p.ts', "import { x } from '../http/handler.js'", false],
  ['src/client/p.ts', "import { x } from '../http/wire/status.js'", true],
  ['src/client/p.ts', "import { x } from '../core/api-types.js'", true],
  ['src/workers/p.ts', "import { x } from '../runtime/engine.js'", false],
  ['src/workers/p.ts', "import { x } from '../http/handler.js'", false],
  ['src/workers/p.ts', "import { x } from '../core/ports.js'", true],
  ['src/stores/sqlite/p.ts', "import { x } from '../../runtime/engine.js'", false],
  ['src/stores/sqlite/p.ts', "import { x } from '../../http/handler.js'", false],
  ['src/stores/sqlite/p.ts', "import { x } from '../../core/ports.js'", true],
  ['src/stores/sqlite/p.ts', "import { x } from '../shared/event-rows.js'", true],
  ['src/modules/workflow/p.ts', "import { x } from '../../core/fold/index.js'", false],
  ['src/modules/workflow/p.ts', "import { x } from '../../core/copy.js'", false],
  ['src/modules/workflow/p.ts', "import { x } from '../approval/gate.js'", false],
  ['src/modules/workflow/p.ts', "import { x } from '../../runtime/engine.js'", false],
  ['src/modules/workflow/p.ts', "import { x } from '../../core/module-api.js'", true],
  ['src/modules/workflow/p.ts', "import { x } from '../approval/index.js'", true],
  ['src/modules/workflow/p.ts', "import { x } from '../shared/shape.js'", true],
  ['src/modules/workflow/p.ts', "import { x } from './directives.js'", true],
  ['src/debugger/p.ts', "import { x } from '../runtime/options.js'", false],
  ['src/debugger/p.ts', "import { x } from '../http/http-options.js'", true],
  ['src/p.ts', "import { x } from './cli/index.js'", false],
  ['src/p.ts', "import { x } from './modules/workflow/index.js'", false],
  ['src/p.ts', "import { x } from './client/index.js'", false],
  ['src/p.ts', "import { x } from './http/handler.js'", true],
  ['src/p.ts', "import { x } from './runtime/engine.js'", true],
  ['src/otel/p.ts', "import { x } from '../runtime/engine.js'", false],
  ['src/otel/p.ts', "import { x } from '../http/handler.js'", false],
  ['src/otel/p.ts', "import type { x } from '../runtime/options.js'", true],
  ['src/otel/p.ts', "import { x } from '../core/envelope.js'", true],
  ['src/nats/p.ts', "import { x } from '../runtime/engine.js'", false],
  ['src/nats/p.ts', "import { x } from '../stores/memory/memory-store.js'", false],
  ['src/nats/p.ts', "import { x } from '../core/projector.js'", true],
  ['src/actor/p.ts', "import { x } from '../cli/index.js'", false],
  ['src/actor/p.ts', "import { x } from '../modules/workflow/index.js'", false],
  ['src/actor/p.ts', "import { x } from '../create-engine.js'", true],
  ['src/actor/p.ts', "import { x } from '../stores/sqlite/sqlite-store.js'", true],
  ['src/actor/p.ts', "import { x } from '../http/handler.js'", true],
  ['src/testing/p.ts', "import { x } from '../cli/index.js'", false],
  ['src/testing/p.ts', "import { x } from '../create-engine.js'", true],
  ['src/core/fold/p.ts', "import { x } from '../runtime-events.js'", true],
  ['src/core/fold/p.ts', "import { x } from './run-fold.js'", true],
  ['src/core/fold/p.ts', "import { x } from '../../runtime/engine.js'", false],
  ['src/core/fold/p.ts', "import { x } from 'node:fs'", false],
]

const dirs: string[] = []
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true })
})

/** Lints every probe, each in its own file, with the repository's biome.json. */
function lintProbes(): Map<number, string> {
  const dir = mkdtempSync(join(tmpdir(), 'skein-layers-'))
  dirs.push(dir)
  copyFileSync('biome.json', join(dir, 'biome.json'))
  PROBES.forEach(([file, statement], i) => {
    const path = join(dir, file.replace(/p\.ts$/, `probe-${i}.ts`))
    mkdirSync(dirname(path), { recursive: true })
    writeFileSync(path, `${statement}\nexport const used = x\n`)
  })
  const biome = resolve('node_modules/.bin/biome')
  const run = spawnSync(
    biome,
    ['lint', '--vcs-enabled=false', '--reporter=json', '--only=style/noRestrictedImports', '.'],
    // Bounded: a hung child would block this worker (no test timeout fires in a sync call).
    { cwd: dir, encoding: 'utf8', timeout: 25_000, killSignal: 'SIGKILL' },
  )
  if (run.error) throw new Error(`biome lint: ${run.error.message}; stderr: ${run.stderr}`)
  const report = JSON.parse(run.stdout) as {
    diagnostics: Array<{ category: string; message: string; location: { path: string } }>
  }
  const flagged = new Map<number, string>()
  for (const d of report.diagnostics) {
    const probe = /probe-(\d+)\.ts$/.exec(d.location.path)
    if (probe && d.category === 'lint/style/noRestrictedImports') {
      flagged.set(Number(probe[1]), d.message)
    }
  }
  return flagged
}

/** Which layer a source file is in (the facade: files directly in src/). */
function layerOf(file: string): string {
  const parts = file.split('/')
  if (parts.length === 2) return 'facade'
  if (parts[1] === 'http' && parts[2] === 'wire') return 'http/wire'
  return parts[1]
}

/** What each layer may import besides itself (docs/architecture.md and biome.json). */
const MAY_IMPORT: Record<string, readonly string[] | 'all'> = {
  core: [],
  runtime: ['core'],
  'http/wire': ['core'],
  http: ['core', 'runtime', 'workers', 'http/wire'],
  client: ['core', 'http/wire'],
  workers: ['core'],
  stores: ['core'],
  modules: ['core'],
  debugger: ['core', 'http'],
  facade: ['core', 'runtime', 'http', 'http/wire', 'stores', 'workers'],
  otel: ['core', 'runtime'],
  nats: ['core'],
  actor: ['core', 'runtime', 'http', 'http/wire', 'stores', 'workers', 'facade'],
  testing: ['core', 'runtime', 'http', 'http/wire', 'stores', 'workers', 'modules', 'facade'],
  cli: 'all',
}

describe('layers', () => {
  it('lint refuses every upward or sideways import and allows the rest', () => {
    const flagged = lintProbes()
    const wrong = PROBES.flatMap(([file, statement, allowed], i) =>
      flagged.has(i) === !allowed
        ? []
        : [`${file}: ${statement} (lint ${allowed ? 'refused' : 'allowed'} it)`],
    )
    expect(wrong).toEqual([])
    // The message says which rule: the layer and what it may import.
    expect(flagged.get(3)).toMatch(/runtime imports only core/)
  })

  it('the real import graph follows the same table', () => {
    const edges = importGraph('src')
    expect(edges.length).toBeGreaterThan(500)
    const upward = edges.flatMap(({ from, to }) => {
      const [a, b] = [layerOf(from), layerOf(to)]
      const allowed = MAY_IMPORT[a]
      if (a === b || allowed === 'all' || allowed?.includes(b)) return []
      return [`${from} -> ${to}`]
    })
    expect(upward).toEqual([])
  })

  it('has no import cycles', () => {
    expect(importCycles(importGraph('src')).map((cycle) => cycle.join(' -> '))).toEqual([])
  })
})
