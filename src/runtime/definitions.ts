import type { DefinitionInfo } from '../core/api-types.js'
import { inputJsonSchema } from '../core/json-schema.js'
import type { Registry } from '../core/registry.js'

/** The registry's definitions grouped by kind and name, in registration order. */
export function describeDefinitions(registry: Registry): DefinitionInfo[] {
  const byName = new Map<string, DefinitionInfo>()
  for (const definition of registry.listDefinitions()) {
    const key = `${definition.kind}:${definition.name}`
    let info = byName.get(key)
    if (!info) {
      info = { kind: definition.kind, name: definition.name, defaultVersion: '', versions: [] }
      byName.set(key, info)
    }
    const version: DefinitionInfo['versions'][number] = { version: definition.version }
    const inputSchema = inputJsonSchema(definition.input)
    if (inputSchema !== undefined) version.inputSchema = inputSchema
    info.versions.push(version)
    const latest = registry.resolve({ kind: definition.kind, name: definition.name })
    info.defaultVersion = latest?.version ?? definition.version
  }
  return [...byName.values()]
}
