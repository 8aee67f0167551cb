/** The Standard Schema v1 interface (standardschema.dev), so any validator library works. */
export interface StandardSchema<Input = unknown, Output = Input> {
  readonly '~standard': {
    readonly version: 1
    readonly vendor: string
    readonly validate: (value: unknown) => StandardResult<Output> | Promise<StandardResult<Output>>
    readonly types?: { readonly input: Input; readonly output: Output } | undefined
  }
}

export type StandardResult<Output> =
  | { readonly value: Output; readonly issues?: undefined }
  | { readonly issues: ReadonlyArray<StandardIssue> }

export interface StandardIssue {
  readonly message: string
  readonly path?: ReadonlyArray<PropertyKey | { readonly key: PropertyKey }> | undefined
}

export type InferOutput<S> = S extends StandardSchema<any, infer O> ? O : unknown
export type InferInput<S> = S extends StandardSchema<infer I, any> ? I : unknown

export const isStandardSchema = (value: unknown): value is StandardSchema =>
  typeof value === 'object' &&
  value !== null &&
  typeof (value as any)['~standard']?.validate === 'function'

const TYPE_ONLY = Symbol.for('skein.typeOnly')

/**
 * A schema that accepts any value and only types it: for event payloads you trust or
 * validate elsewhere (a module's internal events). Input events, which come from outside, need
 * a schema that validates. `payload<{ orderId: string }>()`.
 */
export function payload<T>(): StandardSchema<T, T> {
  return {
    [TYPE_ONLY]: true,
    '~standard': {
      version: 1,
      vendor: 'skein',
      validate: (value) => ({ value: value as T }),
    },
  } as StandardSchema<T, T>
}

/** Whether `schema` is a `payload<T>()`: it types values and checks nothing. */
export const isTypeOnly = (schema: StandardSchema): boolean =>
  (schema as { [TYPE_ONLY]?: boolean })[TYPE_ONLY] === true

export function formatIssues(issues: ReadonlyArray<StandardIssue>): string {
  return issues
    .map((issue) => {
      const path = (issue.path ?? [])
        .map((p) => String(typeof p === 'object' && p !== null ? p.key : p))
        .join('.')
      return path ? `${path}: ${issue.message}` : issue.message
    })
    .join('; ')
}
