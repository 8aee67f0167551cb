/** One line of an agent's conversation, as the model sees it. */
export interface Message {
  role: 'system' | 'user' | 'assistant' | 'tool'
  content: string
  /** On a `tool` message: the call it answers. */
  toolCallId?: string
  /** On a `tool` message: the tool's name. */
  name?: string
  /**
   * On an `assistant` message: the tool calls it made. An extension of the Contract's Message:
   * providers need the calls beside their results to accept a tool message.
   */
  toolCalls?: ToolCall[]
}

export interface ToolCall {
  id: string
  name: string
  arguments: unknown
}

export interface ToolSpec {
  name: string
  description: string
  /** JSON Schema of the tool's arguments. */
  inputSchema: object
}

export interface ModelUsage {
  inputTokens: number
  outputTokens: number
}

export interface ModelRequest {
  instructions: string
  messages: Message[]
  tools: ToolSpec[]
  /** Aborted when the call is interrupted by a user message, cancelled or times out. */
  signal: AbortSignal
  /** Text as it is generated, before the final message is recorded. */
  onTextDelta?: (text: string) => void
}

export interface ModelResponse {
  message: { role: 'assistant'; content: string }
  toolCalls?: ToolCall[]
  usage?: ModelUsage
}

/**
 * The port to a language model (docs/agents.md; public surface): one call per agent turn. It runs inside
 * an effect, so it is retried by policy and recorded like any effect; throw `TerminalError` for
 * failures a retry cannot fix.
 */
export interface ModelAdapter {
  generate(request: ModelRequest): Promise<ModelResponse>
}

/** A streamed piece of assistant text (not durable: the final `agent.message` is). */
export interface AgentDelta {
  runId: string
  threadId: string
  effectId: string
  /** The model call this text belongs to (the `call` of its eventual `agent.message`). */
  call: number
  text: string
}

/** Where streamed text goes, beside the engine's transient channel when it has one. */
export interface DeltaSink {
  publish(delta: AgentDelta): void
}
