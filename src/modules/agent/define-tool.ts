import {
  DefinitionError,
  type EffectContext,
  type InferOutput,
  inputJsonSchema,
  type RetryPolicy,
  type StandardSchema,
} from '../../core/module-api.js'

/** What a tool's `run` receives beside its arguments. */
export interface ToolContext extends Omit<EffectContext, 'emit' | 'effectType' | 'publish'> {
  /** The model's id for this call (stable across attempts, like `effectId`). */
  toolCallId: string
}

export interface ToolDefinition<I = any, O = any> {
  readonly kindOf: 'tool'
  readonly name: string
  readonly description: string
  readonly input?: StandardSchema<any, I>
  /** JSON Schema shown to the model; derived from `input` when it can be (Standard JSON Schema). */
  readonly inputSchema: object
  readonly run: (args: I, ctx: ToolContext) => O | Promise<O>
  readonly retry?: RetryPolicy
  readonly timeoutMs?: number
}

/** Tool names every major provider accepts. */
export const TOOL_NAME = /^[A-Za-z0-9_-]{1,64}$/

/**
 * Declares a tool an agent can call. It runs as an effect (recorded, retried by `retry`);
 * arguments that fail `input` go back to the model as an error it can read and correct.
 *
 * @example
 * const lookup = defineTool({ name: 'lookup_order', description: 'Find an order',
 *   input: z.object({ orderId: z.string() }), run: async ({ orderId }) => orders.get(orderId) })
 */
export function defineTool<S extends StandardSchema | undefined = undefined, O = unknown>(config: {
  name: string
  description: string
  input?: S
  inputSchema?: object
  run: (args: S extends StandardSchema ? InferOutput<S> : any, ctx: ToolContext) => O | Promise<O>
  retry?: RetryPolicy
  timeoutMs?: number
}): ToolDefinition<S extends StandardSchema ? InferOutput<S> : any, O> {
  if (typeof config?.name !== 'string' || !TOOL_NAME.test(config.name)) {
    throw new DefinitionError(
      `defineTool: name must be 1-64 letters, digits, '_' or '-' (got ${JSON.stringify(config?.name)})`,
    )
  }
  if (typeof config.run !== 'function') {
    throw new DefinitionError(`tool ${config.name}: run must be a function`)
  }
  return Object.freeze({
    kindOf: 'tool' as const,
    name: config.name,
    description: config.description ?? '',
    input: config.input as StandardSchema<any, any> | undefined,
    inputSchema: config.inputSchema ?? jsonSchemaOf(config.input),
    run: config.run,
    retry: config.retry,
    timeoutMs: config.timeoutMs,
  })
}

export const isToolDefinition = (value: unknown): value is ToolDefinition =>
  typeof value === 'object' && value !== null && (value as any).kindOf === 'tool'

/**
 * The JSON Schema of a Standard Schema when the library exposes one (Standard JSON Schema, e.g.
 * zod 4), else an open object: the model is told less, validation still applies.
 */
export function jsonSchemaOf(schema: StandardSchema | undefined): object {
  const converted = inputJsonSchema(schema)
  if (converted === undefined) return { type: 'object', additionalProperties: true }
  const { $schema: _drop, ...rest } = converted
  return rest
}
