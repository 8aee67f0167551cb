// A support agent that looks orders up with a tool and refunds them through a workflow that
// waits for a human approval gate. The model here is a small rule-based stand-in so the demo
// runs offline and deterministically; swap in `aiSdkModel(openai('gpt-4o-mini'))` for a real one.
import { defineEffect, defineModule, type Module, type StandardSchema } from 'skein'
import {
  agent,
  defineAgent,
  defineTool,
  type Message,
  type ModelAdapter,
  type ModelResponse,
} from 'skein/agent'
import { approval } from 'skein/approval'
import { defineWorkflow, workflow } from 'skein/workflow'

const orders: Record<string, { orderId: string; amount: number; status: string }> = {
  A100: { orderId: 'A100', amount: 42, status: 'delivered' },
  B200: { orderId: 'B200', amount: 310, status: 'delivered' },
}

/** Input validation without a schema library: arguments the model gets wrong go back to it. */
const orderArgs: StandardSchema<{ orderId: string }> = {
  '~standard': {
    version: 1 as const,
    vendor: 'example',
    validate: (value: unknown) =>
      typeof (value as { orderId?: unknown })?.orderId === 'string'
        ? { value: value as { orderId: string } }
        : { issues: [{ message: 'orderId (string) is required', path: ['orderId'] }] },
  },
}

export const lookupOrder = defineTool({
  name: 'lookup_order',
  description: 'Find an order by id: amount and delivery status',
  input: orderArgs,
  inputSchema: {
    type: 'object',
    properties: { orderId: { type: 'string' } },
    required: ['orderId'],
  },
  run: async ({ orderId }) => orders[orderId] ?? { error: `no order ${orderId}` },
})

export const supportEffects = defineModule({
  namespace: 'support',
  effects: {
    refund: defineEffect<{ orderId: string; amount: number }, { refundId: string }>({
      retry: { maxAttempts: 3, backoffMs: 200 },
      // ctx.effectId is stable across attempts: the payment provider's idempotency key.
      execute: async (input, ctx) => ({ refundId: `rf_${input.orderId}_${ctx.effectId}` }),
    }),
  },
})

/** The refund tool: a child workflow that parks on a human gate before money moves. */
export const issueRefund = defineWorkflow({
  name: 'issue_refund',
  input: orderArgs,
  nodes: {
    approve: {
      run: (ctx) => ctx.gate({ title: `Refund order ${ctx.input.orderId}?` }),
    },
    pay: {
      after: ['approve'],
      when: ({ results }) => results.approve.outcome === 'approve',
      run: (ctx) =>
        ctx.invoke('support.refund', {
          orderId: ctx.input.orderId,
          amount: orders[ctx.input.orderId]?.amount ?? 0,
        }),
    },
  },
  output: ({ results }) => ({
    approved: results.approve.outcome === 'approve',
    refundId: results.pay?.refundId ?? null,
  }),
})

export const supportAgent = defineAgent({
  name: 'support',
  description: 'Answers order questions and issues approved refunds',
  instructions:
    'You are a support agent. Look the order up before anything else. Refunds need issue_refund, which asks a human.',
  tools: [lookupOrder, issueRefund],
  maxTurns: 6,
})

const reply = (content: string): ModelResponse => ({ message: { role: 'assistant', content } })
const call = (name: string, args: unknown, id: string): ModelResponse => ({
  message: { role: 'assistant', content: '' },
  toolCalls: [{ id, name, arguments: args }],
})

/**
 * A scripted stand-in for a real model: finds an order id in the user's message, looks it up,
 * refunds when asked to, and summarises the tool results. Streams its replies word by word.
 */
export function supportDemoModel(): ModelAdapter {
  return {
    async generate({ messages, onTextDelta }) {
      const response = decideReply(messages)
      for (const word of response.message.content.match(/\S+\s*/g) ?? []) onTextDelta?.(word)
      return response
    },
  }
}

function decideReply(messages: Message[]): ModelResponse {
  const asked = [...messages].reverse().find((m) => m.role === 'user')?.content ?? ''
  const orderId = asked.match(/[A-Z]\d{3}/)?.[0]
  const last = messages.at(-1)
  if (!orderId) return reply('Which order is it about? Please give me its id (like A100).')
  if (last?.role === 'user') return call('lookup_order', { orderId }, `lookup-${orderId}`)
  if (last?.role === 'tool' && last.name === 'lookup_order') {
    const order = JSON.parse(last.content)
    if (order.error) return reply(`I could not find order ${orderId}.`)
    if (!/refund/i.test(asked)) return reply(`Order ${orderId} is ${order.status}.`)
    return call('issue_refund', { orderId }, `refund-${orderId}`)
  }
  if (last?.role === 'tool' && last.name === 'issue_refund') {
    const outcome = JSON.parse(last.content)
    return reply(
      outcome.approved
        ? `Your refund for order ${orderId} is on its way (${outcome.refundId}).`
        : `A colleague declined the refund for order ${orderId}.`,
    )
  }
  return reply('How else can I help?')
}

export const modules: Module[] = [
  agent({ definitions: [supportAgent], model: supportDemoModel() }),
  workflow({ definitions: [issueRefund] }),
  approval(),
  supportEffects,
]
