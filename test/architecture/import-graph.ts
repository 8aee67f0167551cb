// The import graph of `src`, read with TypeScript's own parser (static imports, `export … from`
// and dynamic `import()`), for the layering and cycle checks.
import { readdirSync, readFileSync } from 'node:fs'
import { dirname, join, relative, resolve } from 'node:path'
import ts from 'typescript'

export interface ImportEdge {
  from: string
  to: string
  /** `import type` / `export type`: erased at build time, gone at run time. */
  typeOnly: boolean
  /** `import()`: loaded when the code calls it, not when the importing module loads. */
  dynamic?: boolean
}

const sourceFiles = (dir: string): string[] =>
  readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name)
    if (entry.isDirectory()) return sourceFiles(path)
    return /\.ts$/.test(entry.name) && !entry.name.endsWith('.d.ts') ? [path] : []
  })

/** The relative imports of one file: static, `export … from` and dynamic `import()`. */
function importsOf(
  file: string,
): Array<{ specifier: string; typeOnly: boolean; dynamic?: boolean }> {
  const source = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.Latest)
  const found: Array<{ specifier: string; typeOnly: boolean; dynamic?: boolean }> = []
  const visit = (node: ts.Node) => {
    if (ts.isImportDeclaration(node) && ts.isStringLiteral(node.moduleSpecifier)) {
      const clause = node.importClause
      const named = clause?.namedBindings
      const typeOnly =
        clause !== undefined &&
        (clause.isTypeOnly ||
          (clause.name === undefined &&
            named !== undefined &&
            ts.isNamedImports(named) &&
            named.elements.length > 0 &&
            named.elements.every((e) => e.isTypeOnly)))
      found.push({ specifier: node.moduleSpecifier.text, typeOnly })
    } else if (
      ts.isExportDeclaration(node) &&
      node.moduleSpecifier &&
      ts.isStringLiteral(node.moduleSpecifier)
    ) {
      const named = node.exportClause
      const typeOnly =
        node.isTypeOnly ||
        (named !== undefined &&
          ts.isNamedExports(named) &&
          named.elements.every((e) => e.isTypeOnly))
      found.push({ specifier: node.moduleSpecifier.text, typeOnly })
    } else if (
      ts.isCallExpression(node) &&
      node.expression.kind === ts.SyntaxKind.ImportKeyword &&
      node.arguments[0] &&
      ts.isStringLiteral(node.arguments[0])
    ) {
      found.push({ specifier: node.arguments[0].text, typeOnly: false, dynamic: true })
    }
    ts.forEachChild(node, visit)
  }
  visit(source)
  return found
}

/** Every relative import between files of `root` (paths relative to `cwd`, `.ts`). */
export function importGraph(root: string, cwd = process.cwd()): ImportEdge[] {
  const edges: ImportEdge[] = []
  for (const file of sourceFiles(resolve(cwd, root))) {
    for (const { specifier, typeOnly, dynamic } of importsOf(file)) {
      if (!specifier.startsWith('.')) continue
      const target = resolve(dirname(file), specifier).replace(/\.js$/, '.ts')
      edges.push({
        from: relative(cwd, file),
        to: relative(cwd, target),
        typeOnly,
        ...(dynamic ? { dynamic } : {}),
      })
    }
  }
  return edges
}

/** The import cycles among `edges` (each as the files around it, first file repeated last). */
export function importCycles(edges: readonly ImportEdge[]): string[][] {
  const next = new Map<string, string[]>()
  for (const { from, to } of edges) next.set(from, [...(next.get(from) ?? []), to])
  const cycles: string[][] = []
  const state = new Map<string, 'open' | 'done'>()
  const path: string[] = []
  const visit = (file: string) => {
    state.set(file, 'open')
    path.push(file)
    for (const to of next.get(file) ?? []) {
      if (state.get(to) === 'open') cycles.push([...path.slice(path.indexOf(to)), to])
      else if (!state.has(to)) visit(to)
    }
    path.pop()
    state.set(file, 'done')
  }
  for (const file of [...next.keys()].sort()) if (!state.has(file)) visit(file)
  return cycles
}
