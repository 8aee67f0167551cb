import { defineProjection } from '../../core/module-api.js'
import type { ToolCall } from './types.js'

export interface ConversationLine {
  threadId: string | null
  seq: number
  role: 'user' | 'assistant' | 'tool'
  content: string
  toolCalls?: ToolCall[]
  toolCallId?: string
  name?: string
  isError?: boolean
}

/**
 * Every agent thread's transcript in log order: user, assistant and tool lines exactly as the
 * model saw them (a queued user message appears where it was delivered, not where it arrived).
 */
export const conversation = defineProjection<{ messages: ConversationLine[] }>({
  initial: { messages: [] },
  reduce(state, event) {
    if (event.type !== 'agent.message') return state
    const p = event.payload as Record<string, any>
    const line: ConversationLine = {
      threadId: event.threadId,
      seq: event.seq,
      role: p.role,
      content: p.content,
    }
    if (p.toolCalls) line.toolCalls = p.toolCalls
    if (p.toolCallId !== undefined) line.toolCallId = p.toolCallId
    if (p.name !== undefined) line.name = p.name
    if (p.isError) line.isError = true
    return { messages: [...state.messages, line] }
  },
})

export interface TokenUsage {
  inputTokens: number
  outputTokens: number
  /** Model calls recorded (agent turns and rubric judgements). */
  calls: number
}

/** Tokens of every recorded model call of the run (agents and model-judged evaluators). */
export const tokenUsage = defineProjection<TokenUsage>({
  initial: { inputTokens: 0, outputTokens: 0, calls: 0 },
  reduce(state, event) {
    const p = event.payload as Record<string, any>
    const counted =
      (event.type === 'agent.message' && p.role === 'assistant') ||
      (event.type === 'evaluator.evaluated' && p.judged === true)
    if (!counted) return state
    return {
      inputTokens: state.inputTokens + (p.usage?.inputTokens ?? 0),
      outputTokens: state.outputTokens + (p.usage?.outputTokens ?? 0),
      calls: state.calls + 1,
    }
  },
})
