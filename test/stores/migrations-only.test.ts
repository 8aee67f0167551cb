import { readdirSync, readFileSync } from 'node:fs'
import { join, relative } from 'node:path'
import { describe, expect, it } from 'vitest'

// Tables come only from numbered migrations (docs/decisions.md, "Companion tables come from
// the store's migrations"): a table created when something opens would never be altered by a
// later release, and an old database would keep whatever shape its first open gave it.
const root = join(import.meta.dirname, '..', '..')
const migrationFiles = new Set([
  'src/stores/sqlite/schema.ts',
  'src/stores/postgres/schema.ts',
  'src/actor/sqlite-registry.ts',
])

/** A migration's text may live in a file of its own that a schema.ts imports. */
function importedBySchemas(): string[] {
  return ['src/stores/sqlite', 'src/stores/postgres'].flatMap((dir) =>
    [
      ...readFileSync(join(root, dir, 'schema.ts'), 'utf8').matchAll(/from '\.\/([\w-]+)\.js'/g),
    ].map((m) => `${dir}/${m[1]}.ts`),
  )
}

describe('tables only through migrations', () => {
  it('no source outside the migration lists creates a table or an index', () => {
    for (const file of importedBySchemas()) migrationFiles.add(file)
    const creators = readdirSync(join(root, 'src'), { recursive: true, withFileTypes: true })
      .filter((entry) => entry.isFile() && entry.name.endsWith('.ts'))
      .map((entry) => relative(root, join(entry.parentPath, entry.name)))
      .filter((file) =>
        /CREATE\s+(UNIQUE\s+)?(TABLE|INDEX)/.test(readFileSync(join(root, file), 'utf8')),
      )
    expect(creators.length).toBeGreaterThan(0)
    expect(creators.filter((file) => !migrationFiles.has(file))).toEqual([])
  })
})
