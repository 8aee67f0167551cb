import type { ModelAdapter, ModelRequest, ModelResponse } from './types.js'

/**
 * The model used when none is configured: replies `Echo: <last user message>`, streamed word by
 * word, never calls tools. Deterministic, so demos and tests need no network or key.
 */
export function echoModel(): ModelAdapter {
  return {
    async generate(request) {
      const last = [...request.messages].reverse().find((m) => m.role === 'user')
      const content = `Echo: ${last?.content ?? ''}`
      if (request.onTextDelta) {
        for (const piece of content.match(/\S+\s*/g) ?? []) request.onTextDelta(piece)
      }
      const inputTokens = request.messages.reduce((n, m) => n + countWords(m.content), 0)
      return {
        message: { role: 'assistant', content },
        usage: { inputTokens, outputTokens: countWords(content) },
      }
    },
  }
}

const countWords = (text: string) => (text.match(/\S+/g) ?? []).length

export type ScriptStep =
  | ModelResponse
  | ((request: ModelRequest, index: number) => ModelResponse | Promise<ModelResponse>)

export interface ScriptedModel extends ModelAdapter {
  /** Every request received, in order (retries and interrupted calls included). */
  readonly requests: ModelRequest[]
}

/**
 * A ModelAdapter that plays `steps` in order, one per call: a response, or a function of the
 * request (to block, stream, throw or inspect). For tests of agents and evaluators.
 *
 * @example
 * const model = scriptedModel([
 *   { message: { role: 'assistant', content: '' }, toolCalls: [{ id: 'c1', name: 'lookup', arguments: { id: 7 } }] },
 *   { message: { role: 'assistant', content: 'Order 7 shipped.' } },
 * ])
 */
export function scriptedModel(steps: readonly ScriptStep[]): ScriptedModel {
  const requests: ModelRequest[] = []
  return {
    requests,
    async generate(request) {
      const index = requests.length
      requests.push(request)
      const step = steps[index]
      if (step === undefined) {
        throw new Error(`scriptedModel: no step for call ${index + 1} (script has ${steps.length})`)
      }
      return typeof step === 'function' ? step(request, index) : step
    },
  }
}
