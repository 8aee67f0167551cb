import { TerminalError } from '../../core/module-api.js'
import type { Message, ModelAdapter, ToolCall } from './types.js'

/**
 * A Vercel AI SDK language model (`LanguageModelV2`/`V3` or a gateway id string), typed loosely
 * so this file compiles for users who do not install the optional `ai` peer.
 */
export type AiSdkLanguageModel = string | { readonly specificationVersion: string }

export interface AiSdkModelOptions {
  /** Extra `streamText` settings (temperature, maxOutputTokens, providerOptions, headers, …). */
  settings?: Record<string, unknown>
  /** How to load `ai` (tests, bundlers); default `import('ai')`. */
  load?: () => Promise<any>
}

/**
 * Adapts a Vercel AI SDK model to a ModelAdapter. `ai` is imported on the first call, so apps
 * without it never load it. Text streams through `onTextDelta`; tools are declared to the model
 * but never executed by the SDK: the agent kind runs them as durable effects.
 *
 * @example
 * import { openai } from '@ai-sdk/openai'
 * agent({ definitions: [support], model: aiSdkModel(openai('gpt-4o-mini')) })
 */
export function aiSdkModel(
  model: AiSdkLanguageModel,
  options: AiSdkModelOptions = {},
): ModelAdapter {
  let loaded: Promise<any> | undefined
  const load = () => {
    loaded ??= (options.load ?? (() => import('ai')))().catch((error: unknown) => {
      loaded = undefined
      throw new TerminalError(
        `aiSdkModel needs the optional peer dependency "ai" (npm install ai): ${(error as Error)?.message ?? error}`,
      )
    })
    return loaded
  }
  return {
    async generate(request) {
      const ai = await load()
      const tools: Record<string, unknown> = {}
      for (const t of request.tools) {
        tools[t.name] = ai.tool({
          description: t.description,
          inputSchema: ai.jsonSchema(t.inputSchema),
        })
      }
      let failure: unknown
      const result = ai.streamText({
        ...options.settings,
        model,
        system: request.instructions,
        messages: toModelMessages(request.messages),
        ...(request.tools.length > 0 ? { tools } : {}),
        abortSignal: request.signal,
        onError: ({ error }: { error: unknown }) => {
          failure ??= error
        },
      })
      const signal = request.signal
      const consume = async () => {
        for await (const delta of result.textStream) {
          if (!signal.aborted) request.onTextDelta?.(delta)
        }
        if (failure !== undefined) throw failure
        return Promise.all([result.text, result.toolCalls, result.usage])
      }
      // A provider stream that ignores the signal must not keep an interrupted call alive.
      const [text, calls, usage] = await Promise.race([consume(), abortion(signal)])
      const toolCalls: ToolCall[] = (calls ?? []).map((c: any) => ({
        id: c.toolCallId,
        name: c.toolName,
        arguments: c.input,
      }))
      return {
        message: { role: 'assistant', content: text ?? '' },
        ...(toolCalls.length > 0 ? { toolCalls } : {}),
        usage: { inputTokens: usage?.inputTokens ?? 0, outputTokens: usage?.outputTokens ?? 0 },
      }
    },
  }
}

function abortion(signal: AbortSignal): Promise<never> {
  return new Promise((_, reject) => {
    const fail = () => reject(signal.reason ?? new Error('model call aborted'))
    if (signal.aborted) fail()
    else signal.addEventListener('abort', fail, { once: true })
  })
}

/** Our transcript as AI SDK ModelMessages (tool calls beside their results, as providers need). */
export function toModelMessages(messages: readonly Message[]): unknown[] {
  const out: unknown[] = []
  for (const m of messages) {
    if (m.role === 'assistant') {
      const parts: unknown[] = []
      if (m.content) parts.push({ type: 'text', text: m.content })
      for (const c of m.toolCalls ?? []) {
        parts.push({
          type: 'tool-call',
          toolCallId: c.id,
          toolName: c.name,
          input: c.arguments ?? {},
        })
      }
      out.push({ role: 'assistant', content: parts })
    } else if (m.role === 'tool') {
      const part = {
        type: 'tool-result',
        toolCallId: m.toolCallId ?? '',
        toolName: m.name ?? '',
        output: { type: 'text', value: m.content },
      }
      // Results of one assistant message go in one tool message.
      const last = out.at(-1) as { role?: string; content?: unknown[] } | undefined
      if (last?.role === 'tool') last.content?.push(part)
      else out.push({ role: 'tool', content: [part] })
    } else {
      out.push({ role: m.role, content: m.content })
    }
  }
  return out
}
