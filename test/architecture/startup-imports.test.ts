// What a process that opens an engine on SQLite loads before its first line runs: the modules
// reachable from the entries it imports by static imports (dynamic `import()` loads later, when
// called). A restarted host recovering runs pays for every module here before recovery starts
// (docs/performance.md, "Recovery after kill -9"), so HTTP serving and the Postgres and NATS
// adapters stay out of it until used.
import { describe, expect, it } from 'vitest'
import { importGraph } from './import-graph.js'

const ENTRIES = ['src/index.ts', 'src/stores/sqlite/index.ts', 'src/modules/workflow/index.ts']

function loadedAtImport(entries: string[]): Set<string> {
  const next = new Map<string, string[]>()
  for (const { from, to, typeOnly, dynamic } of importGraph('src')) {
    if (typeOnly || dynamic) continue
    next.set(from, [...(next.get(from) ?? []), to])
  }
  const seen = new Set<string>()
  const visit = (file: string) => {
    if (seen.has(file)) return
    seen.add(file)
    for (const to of next.get(file) ?? []) visit(to)
  }
  for (const entry of entries) visit(entry)
  return seen
}

describe('an engine on SQLite, at import', () => {
  it('loads neither the HTTP handler, its routes nor the Node server adapter', () => {
    const loaded = [...loadedAtImport(ENTRIES)]
    expect(
      loaded.filter(
        (file) =>
          file === 'src/http/handler.ts' ||
          file === 'src/http/server.ts' ||
          file.startsWith('src/http/routes/index') ||
          file === 'src/http/live-streams.ts',
      ),
    ).toEqual([])
  })

  it('loads no Postgres or NATS code', () => {
    const loaded = [...loadedAtImport(ENTRIES)]
    expect(
      loaded.filter(
        (file) => file.startsWith('src/stores/postgres/') || file.startsWith('src/nats/'),
      ),
    ).toEqual([])
  })
})
