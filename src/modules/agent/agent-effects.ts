import {
  type EffectContext,
  type EffectDefinition,
  formatIssues,
  type Json,
  TerminalError,
} from '../../core/module-api.js'
import type { ToolDefinition } from './define-tool.js'
import type {
  DeltaSink,
  Message,
  ModelAdapter,
  ModelResponse,
  ToolCall,
  ToolSpec,
} from './types.js'

/** The engine's transient channel, when it offers one (see docs/agents.md, "Streaming"). */
type Publish = (type: string, payload: Json) => void

export interface ModelCallSpec {
  adapter: ModelAdapter
  instructions: string
  messages: Message[]
  tools: ToolSpec[]
  call: number
  sink?: DeltaSink
}

/**
 * One model call as an anonymous local effect. The assistant message is emitted as
 * `agent.message` atomically with the attempt's result, so the conversation is written once even
 * when an attempt is retried or the process dies mid-call; the result itself stays small.
 */
export function modelEffect(spec: ModelCallSpec): EffectDefinition {
  return {
    kindOf: 'effect',
    type: 'agent.model',
    async execute(_input: unknown, ctx: EffectContext) {
      const publish = ctx.publish as Publish | undefined
      const sink = spec.sink
      const onTextDelta =
        sink || publish
          ? (text: string) => {
              if (typeof text !== 'string' || text.length === 0) return
              const delta = {
                runId: ctx.runId,
                threadId: ctx.threadId,
                effectId: ctx.effectId,
                call: spec.call,
                text,
              }
              // Streaming is best effort: a failing listener must not fail the model call.
              try {
                sink?.publish(delta)
                publish?.('agent.delta', delta)
              } catch {}
            }
          : undefined
      const response = await spec.adapter.generate({
        instructions: spec.instructions,
        messages: spec.messages.map((m) => ({ ...m })),
        tools: spec.tools,
        signal: ctx.signal,
        ...(onTextDelta ? { onTextDelta } : {}),
      })
      const message = assistantMessage(response, spec.call)
      ctx.emit('agent.message', message)
      return { call: spec.call, toolCalls: (message.toolCalls as Json[] | undefined)?.length ?? 0 }
    },
  }
}

/** Checks a ModelAdapter's answer; a malformed one is terminal (retrying will not fix code). */
export function assistantMessage(response: ModelResponse, call: number): Record<string, Json> {
  const content = response?.message?.content
  if (typeof content !== 'string') {
    throw new TerminalError('ModelAdapter.generate must resolve { message: { content: string } }')
  }
  const out: Record<string, Json> = { call, role: 'assistant', content }
  const calls = response.toolCalls ?? []
  if (!Array.isArray(calls)) throw new TerminalError('ModelAdapter toolCalls must be an array')
  if (calls.length > 0) {
    const seen = new Set<string>()
    out.toolCalls = calls.map((c: ToolCall, i): Json => {
      if (typeof c?.name !== 'string') throw new TerminalError('a tool call needs a name')
      // Ids key durable commands: make them present and unique within the call.
      let id = typeof c.id === 'string' && c.id.length > 0 ? c.id : `call_${call}_${i}`
      if (seen.has(id)) id = `${id}_${i}`
      seen.add(id)
      return { id, name: c.name, arguments: parseArguments(c.arguments) }
    })
  }
  const usage = response.usage
  if (usage && Number.isFinite(usage.inputTokens) && Number.isFinite(usage.outputTokens)) {
    out.usage = { inputTokens: usage.inputTokens, outputTokens: usage.outputTokens }
  }
  return out
}

/** Providers send arguments as JSON text or as a value; the log keeps the value. */
function parseArguments(value: unknown): Json {
  if (typeof value === 'string') {
    try {
      return JSON.parse(value) as Json
    } catch {
      return value
    }
  }
  return (value ?? {}) as Json
}

export type ToolOutcome =
  | { ok: true; value: Json }
  | { ok: false; error: { code: string; message: string } }

/**
 * One tool call as an effect. Arguments are validated here, inside the attempt, because
 * Standard Schemas may validate asynchronously and `decide` must stay synchronous; a
 * validation failure is a normal result the model reads, never a retry.
 */
export function toolEffect(tool: ToolDefinition, toolCallId: string): EffectDefinition {
  return {
    kindOf: 'effect',
    type: `agent.tool.${tool.name}`,
    async execute(args: unknown, ctx: EffectContext): Promise<ToolOutcome> {
      let value = args
      if (tool.input) {
        const checked = await tool.input['~standard'].validate(args)
        if (checked.issues) {
          const message = `invalid arguments for ${tool.name}: ${formatIssues(checked.issues)}`
          return { ok: false, error: { code: 'INVALID_ARGUMENTS', message } }
        }
        value = checked.value
      }
      const { effectId, attempt, runId, threadId, signal } = ctx
      const result = await tool.run(value, {
        effectId,
        attempt,
        runId,
        threadId,
        signal,
        toolCallId,
      })
      return { ok: true, value: (result ?? null) as Json }
    },
  }
}
