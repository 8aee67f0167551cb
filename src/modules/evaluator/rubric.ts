import type { Json } from '../../core/module-api.js'
import type { ModelAdapter, ModelUsage } from '../agent/index.js'
import type { EvaluatorDefinition } from './define-evaluator.js'

export const SUBMIT_TOOL = 'submit_evaluation'

/**
 * Asks the model to judge `input` against the rubric and to answer through one tool call
 * (structured output every tool-calling model supports); a JSON object in the text is accepted
 * too. An answer that cannot be read throws, so the effect's retry policy asks again.
 */
export async function judge(
  model: ModelAdapter,
  def: EvaluatorDefinition,
  input: Json,
  signal: AbortSignal,
): Promise<{ evaluation: Record<string, unknown>; usage?: ModelUsage }> {
  const rubric = def.rubric!
  const questions = rubric.questions.map((q, i) => `${i + 1}. ${q}`).join('\n')
  const instructions = [
    rubric.instructions ?? `You are the evaluator "${def.name}".`,
    `Judge the input against these questions:\n${questions}`,
    `Then call ${SUBMIT_TOOL} once with route (one of: ${def.routes.join(', ')}), score (0 to 1) and a one-sentence reason.`,
  ].join('\n\n')
  const response = await model.generate({
    instructions,
    messages: [
      { role: 'user', content: typeof input === 'string' ? input : JSON.stringify(input) },
    ],
    tools: [
      {
        name: SUBMIT_TOOL,
        description: 'Submit the evaluation',
        inputSchema: {
          type: 'object',
          properties: {
            route: { type: 'string', enum: [...def.routes] },
            score: { type: 'number', minimum: 0, maximum: 1 },
            reason: { type: 'string' },
          },
          required: ['route'],
        },
      },
    ],
    signal,
  })
  const call = response.toolCalls?.find((c) => c.name === SUBMIT_TOOL)
  const evaluation = call ? asObject(call.arguments) : asObject(jsonIn(response.message?.content))
  if (!evaluation) {
    throw new Error(`evaluator ${def.name}: the model gave no ${SUBMIT_TOOL} call or JSON answer`)
  }
  return response.usage ? { evaluation, usage: response.usage } : { evaluation }
}

function asObject(value: unknown): Record<string, unknown> | undefined {
  if (typeof value === 'string') value = jsonIn(value)
  return typeof value === 'object' && value !== null && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : undefined
}

/** The first `{…}` span of a text, parsed; undefined when there is none. */
function jsonIn(text: unknown): unknown {
  if (typeof text !== 'string') return undefined
  const start = text.indexOf('{')
  const end = text.lastIndexOf('}')
  if (start < 0 || end <= start) return undefined
  try {
    return JSON.parse(text.slice(start, end + 1))
  } catch {
    return undefined
  }
}
