import { readFileSync } from 'node:fs'
import ts from 'typescript'
import { describe, expect, it } from 'vitest'
import * as moduleApi from '../../src/core/module-api.js'
import * as root from '../../src/index.js'
import { importGraph } from './import-graph.js'

/** The names a file exports (values and types), read from its source. */
function exportedNames(file: string): string[] {
  const source = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.Latest)
  const names: string[] = []
  for (const statement of source.statements) {
    if (!ts.isExportDeclaration(statement)) continue
    const clause = statement.exportClause
    if (clause && ts.isNamedExports(clause))
      for (const e of clause.elements) names.push(e.name.text)
  }
  return names.sort()
}

describe('the module API (src/core/module-api.ts)', () => {
  it('is all the core a built-in module imports', () => {
    const fromModules = importGraph('src/modules').filter((e) => e.to.startsWith('src/core/'))
    expect(fromModules.length).toBeGreaterThan(20)
    expect(new Set(fromModules.map((e) => e.to))).toEqual(new Set(['src/core/module-api.ts']))
  })

  it('is exported whole by the `skein` root, values and types, so a user module has it all', () => {
    const api = exportedNames('src/core/module-api.ts')
    expect(api).toEqual(expect.arrayContaining(['defineModule', 'defineKind', 'Outcome']))
    const missing = api.filter((name) => !exportedNames('src/index.ts').includes(name))
    expect(missing).toEqual([])
    for (const [name, value] of Object.entries(moduleApi)) {
      expect((root as Record<string, unknown>)[name], name).toBe(value)
    }
  })
})
