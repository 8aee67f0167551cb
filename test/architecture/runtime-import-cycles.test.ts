import { readdirSync, readFileSync } from 'node:fs'
import { dirname, join, relative, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..')
const RUNTIME = join(ROOT, 'src/runtime')

/** Every module specifier a file imports or re-exports from, type-only ones included. */
function specifiersOf(source: string): string[] {
  const out: string[] = []
  const pattern = /^\s*(?:import|export)\b[^'"]*?\bfrom\s*['"]([^'"]+)['"]/gm
  for (const match of source.matchAll(pattern)) out.push(match[1])
  for (const match of source.matchAll(/^\s*import\s*['"]([^'"]+)['"]/gm)) out.push(match[1])
  return out
}

/** The import graph of the `.ts` files of `dir` (edges to files outside it are left out). */
function importGraph(dir: string): Map<string, string[]> {
  const files = readdirSync(dir, { recursive: true, encoding: 'utf8' })
    .filter((name) => name.endsWith('.ts'))
    .map((name) => join(dir, name))
  const known = new Set(files)
  const graph = new Map<string, string[]>()
  for (const file of files) {
    const targets = specifiersOf(readFileSync(file, 'utf8'))
      .filter((spec) => spec.startsWith('.'))
      .map((spec) => resolve(dirname(file), spec).replace(/\.js$/, '.ts'))
      .filter((target) => known.has(target))
    graph.set(file, targets)
  }
  return graph
}

/** Each loop found by a depth-first walk, as the files on it. */
function cyclesOf(graph: Map<string, string[]>): string[][] {
  const cycles: string[][] = []
  const state = new Map<string, 'open' | 'done'>()
  const path: string[] = []
  const visit = (file: string) => {
    state.set(file, 'open')
    path.push(file)
    for (const next of graph.get(file) ?? []) {
      if (state.get(next) === 'open') cycles.push(path.slice(path.indexOf(next)))
      else if (!state.has(next)) visit(next)
    }
    path.pop()
    state.set(file, 'done')
  }
  for (const file of graph.keys()) if (!state.has(file)) visit(file)
  return cycles
}

describe('src/runtime imports', () => {
  it('form no loop (type-only imports count: a loop of types is a loop of ideas)', () => {
    const graph = importGraph(RUNTIME)
    expect(graph.size).toBeGreaterThan(20)
    const loops = cyclesOf(graph).map((files) => files.map((f) => relative(ROOT, f)).join(' -> '))
    expect(loops).toEqual([])
  })

  it('the loop finder finds a loop', () => {
    const graph = new Map([
      ['a', ['b']],
      ['b', ['c']],
      ['c', ['a']],
      ['d', ['a']],
    ])
    expect(cyclesOf(graph)).toEqual([['a', 'b', 'c']])
    expect(specifiersOf("import type { X } from './x.js'\nexport { y } from '../y.js'")).toEqual([
      './x.js',
      '../y.js',
    ])
  })
})
