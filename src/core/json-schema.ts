import { checkJson, type JsonObject } from './json.js'
import type { StandardSchema } from './schema.js'

/**
 * The JSON Schema (draft 2020-12) of the values a Standard Schema accepts, when its library can
 * say: Standard JSON Schema (`~standard.jsonSchema.input`, zod ≥ 4.2, ArkType, Valibot's
 * adapter), or a `toJSONSchema()` method (earlier zod 4). `undefined` when it cannot — no
 * converter, a schema it cannot express (transforms, custom checks), or output that is not JSON.
 *
 * @example inputJsonSchema(z.object({ sku: z.string() })) // { $schema, type: 'object', … }
 */
export function inputJsonSchema(schema: StandardSchema | undefined): JsonObject | undefined {
  if (schema === undefined) return undefined
  let out: unknown
  try {
    const converter = (schema as any)['~standard']?.jsonSchema
    if (typeof converter?.input === 'function') out = converter.input({ target: 'draft-2020-12' })
    else if (typeof (schema as any).toJSONSchema === 'function')
      out = (schema as any).toJSONSchema({ io: 'input' })
  } catch {
    return undefined
  }
  if (out === null || typeof out !== 'object' || Array.isArray(out)) return undefined
  const checked = checkJson(out)
  return checked.ok ? (checked.value as JsonObject) : undefined
}
