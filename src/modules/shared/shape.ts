import type { StandardSchema } from '../../core/module-api.js'

type Scalar = 'string' | 'number' | 'boolean' | 'any'
/** A field's type; `?` marks it optional; a list of strings allows exactly those values. */
type FieldType = Scalar | `${Scalar}?` | readonly string[]

interface ShapeOptions {
  /** Refuse fields that are not declared (inputs: a typo is an error, not a no-op). */
  closed?: boolean
  /** Fields callers must not send, with the reason given when they do. */
  forbidden?: Record<string, string>
}

/**
 * A minimal Standard Schema for module event catalogs: an object with typed fields. Keeps our
 * modules free of a validation library while still rejecting malformed signals.
 */
export function shape<T>(
  fields: Record<keyof T & string, FieldType>,
  options: ShapeOptions = {},
): StandardSchema<T, T> {
  const entries = Object.entries(fields) as Array<[string, FieldType]>
  return {
    '~standard': {
      version: 1,
      vendor: 'skein',
      validate(value) {
        if (typeof value !== 'object' || value === null || Array.isArray(value)) {
          return { issues: [{ message: 'expected an object' }] }
        }
        const record = value as Record<string, unknown>
        const issues: Array<{ message: string; path: string[] }> = []
        for (const [key, spec] of entries) {
          const problem = fieldProblem(key, spec, record[key])
          if (problem) issues.push({ message: problem, path: [key] })
        }
        for (const key of Object.keys(record)) {
          const why = options.forbidden?.[key]
          if (why !== undefined) issues.push({ message: why, path: [key] })
          else if (options.closed && !(key in fields)) {
            issues.push({ message: `unknown field ${key}`, path: [key] })
          }
        }
        return issues.length > 0 ? { issues } : { value: value as T }
      },
    },
  }
}

function fieldProblem(key: string, spec: FieldType, field: unknown): string | undefined {
  if (typeof spec !== 'string') {
    if (field === undefined) return undefined
    return spec.includes(field as string) ? undefined : `${key} must be one of ${spec.join(', ')}`
  }
  const optional = spec.endsWith('?')
  const type = optional ? spec.slice(0, -1) : spec
  if (field === undefined || field === null) return optional ? undefined : `${key} is required`
  if (type !== 'any' && typeof field !== type) return `${key} must be a ${type}`
  return undefined
}
