import type { StandardSchema } from '../../core/schema.js'

type FieldType = 'string' | 'number' | 'boolean' | 'any' | 'string?' | 'number?' | 'any?'

/**
 * A minimal Standard Schema for module event catalogs: an object with typed fields. Keeps our
 * modules free of a validation library while still rejecting malformed signals.
 */
export function shape<T>(fields: Record<keyof T & string, FieldType>): StandardSchema<T, T> {
  return {
    '~standard': {
      version: 1,
      vendor: 'skein',
      validate(value) {
        if (typeof value !== 'object' || value === null || Array.isArray(value)) {
          return { issues: [{ message: 'expected an object' }] }
        }
        const issues: Array<{ message: string; path: string[] }> = []
        for (const [key, spec] of Object.entries(fields) as Array<[string, FieldType]>) {
          const optional = spec.endsWith('?')
          const type = optional ? spec.slice(0, -1) : spec
          const field = (value as Record<string, unknown>)[key]
          if (field === undefined || field === null) {
            if (!optional) issues.push({ message: `${key} is required`, path: [key] })
            continue
          }
          if (type !== 'any' && typeof field !== type) {
            issues.push({ message: `${key} must be a ${type}`, path: [key] })
          }
        }
        return issues.length > 0 ? { issues } : { value: value as T }
      },
    },
  }
}
