import {
  type Definition,
  DefinitionError,
  type FlowControl,
  type InferInput,
  type InferOutput,
  type RetryPolicy,
  type SignalSchemas,
  type StandardSchema,
} from '../../core/module-api.js'
import { type Declarations, declarationsOf } from '../shared/declarations.js'
import { isToolDefinition, jsonSchemaOf, TOOL_NAME, type ToolDefinition } from './define-tool.js'
import type { ModelAdapter, ToolSpec } from './types.js'

/** A tool as the agent kind uses it: an effect tool, or a definition run as a child thread. */
export interface AgentTool extends ToolSpec {
  tool?: ToolDefinition
  definition?: Definition
}

/** An agent run's output: the final assistant message's text. */
export interface AgentOutput {
  text: string
}

/**
 * `I` is the input the instructions see (the schema's output); `In` what `start` takes; `Sg`
 * the signals its runs accept (docs/workflows.md, "Signals"); `N` its name.
 */
export interface AgentDefinition<
  I = any,
  In = I,
  Sg extends SignalSchemas = SignalSchemas,
  N extends string = string,
> extends Definition<In, AgentOutput> {
  readonly kind: 'agent'
  readonly name: N
  readonly signals?: Sg
  readonly instructions: string | ((input: I) => string)
  readonly description?: string
  readonly tools: ReadonlyMap<string, AgentTool>
  /** Model calls allowed per exchange (per user message for conversational agents). */
  readonly maxTurns: number
  readonly conversational: boolean
  readonly model?: ModelAdapter
  /** Retry policy of each model call (default 3 attempts, 1 s backoff). */
  readonly modelRetry: RetryPolicy
  readonly modelTimeoutMs?: number
}

export type AgentToolInput = ToolDefinition | Definition

/**
 * Declares an agent: a model in a loop with tools. A workflow, agent or evaluator definition in
 * `tools` runs as a child thread whose output is the tool's result.
 *
 * @example
 * const support = defineAgent({ name: 'support', instructions: 'Help the customer.',
 *   tools: [lookupOrder, refundWorkflow], maxTurns: 8 })
 */
export function defineAgent<
  S extends StandardSchema | undefined = undefined,
  Sg extends SignalSchemas = {},
  const N extends string = string,
>(
  config: {
    name: N
    version?: string
    /** This version is the one a start by name without a version gets (docs/engine.md). */
    default?: boolean
    /** Flow control of its runs: concurrency per key (docs/flow-control.md). */
    flow?: FlowControl
    instructions: string | ((input: S extends StandardSchema ? InferOutput<S> : any) => string)
    description?: string
    input?: S
    tools?: readonly AgentToolInput[]
    maxTurns?: number
    conversational?: boolean
    model?: ModelAdapter
    modelRetry?: RetryPolicy
    modelTimeoutMs?: number
  } & Declarations<Sg>,
): AgentDefinition<
  S extends StandardSchema ? InferOutput<S> : any,
  S extends StandardSchema ? InferInput<S> : any,
  Sg,
  N
> {
  const name = config?.name
  if (typeof name !== 'string' || name.length === 0) {
    throw new DefinitionError('defineAgent: name is required')
  }
  const where = `agent ${name}`
  const instructions = config.instructions
  if (typeof instructions !== 'string' && typeof instructions !== 'function') {
    throw new DefinitionError(`${where}: instructions must be a string or a function of the input`)
  }
  const maxTurns = config.maxTurns ?? 20
  if (!Number.isInteger(maxTurns) || maxTurns < 1) {
    throw new DefinitionError(`${where}: maxTurns must be a positive integer`)
  }
  if (config.model !== undefined && typeof config.model?.generate !== 'function') {
    throw new DefinitionError(`${where}: model must be a ModelAdapter with generate()`)
  }
  const declared = declarationsOf(where, config)
  const tools = new Map<string, AgentTool>()
  for (const entry of config.tools ?? []) {
    const tool = toAgentTool(where, entry)
    if (tools.has(tool.name)) {
      throw new DefinitionError(`${where}: two tools are named "${tool.name}"`)
    }
    tools.set(tool.name, tool)
  }
  return Object.freeze({
    kind: 'agent' as const,
    name,
    version: config.version ?? 'v1',
    ...(config.default !== undefined ? { default: config.default } : {}),
    ...(config.flow !== undefined ? { flow: config.flow } : {}),
    input: config.input,
    instructions,
    description: config.description,
    tools,
    maxTurns,
    conversational: config.conversational === true,
    model: config.model,
    modelRetry: config.modelRetry ?? { maxAttempts: 3, backoffMs: 1000 },
    modelTimeoutMs: config.modelTimeoutMs,
    ...declared,
  })
}

function toAgentTool(where: string, entry: AgentToolInput): AgentTool {
  if (isToolDefinition(entry)) {
    const { name, description, inputSchema } = entry
    return { name, description, inputSchema, tool: entry }
  }
  const definition = entry as Definition & { description?: string; conversational?: boolean }
  if (typeof definition?.kind !== 'string' || typeof definition.name !== 'string') {
    throw new DefinitionError(`${where}: a tool must be a defineTool() or a definition`)
  }
  if (definition.conversational) {
    throw new DefinitionError(
      `${where}: conversational agent ${definition.name} never completes, so it cannot be a tool`,
    )
  }
  // Definition names may hold characters providers reject in tool names.
  const name = definition.name.replace(/[^A-Za-z0-9_-]/g, '_').slice(0, 64)
  if (!TOOL_NAME.test(name)) throw new DefinitionError(`${where}: bad tool name ${name}`)
  const description =
    definition.description ??
    `Runs the ${definition.kind} "${definition.name}" and returns its output.`
  return { name, description, inputSchema: jsonSchemaOf(definition.input), definition }
}

/** The first user message of a run: a string, `{ text }`, or the input as JSON. */
export function renderInput(input: unknown): string | null {
  if (input === null || input === undefined) return null
  if (typeof input === 'string') return input
  if (typeof input === 'object' && !Array.isArray(input)) {
    const text = (input as { text?: unknown }).text
    if (typeof text === 'string' && Object.keys(input).length === 1) return text
  }
  return JSON.stringify(input)
}
