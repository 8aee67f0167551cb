import {
  type Command,
  commands,
  type DecideContext,
  defineKind,
  type ErrorInfo,
  type EventEnvelope,
  type Json,
  type KindContext,
  type Outcome,
} from '../../core/module-api.js'
import { modelEffect, type ToolOutcome, toolEffect } from './agent-effects.js'
import { type AgentDefinition, renderInput } from './define-agent.js'
import { echoModel } from './echo-model.js'
import type { DeltaSink, Message, ModelAdapter, ToolCall } from './types.js'

interface Queued {
  /** Seq of the `agent.user.message` signal (0: the run's input). */
  seq: number
  text: string
  interrupt: boolean
}

/**
 * An agent thread's state: a fold of its own events only. The transcript is exactly the
 * thread's `agent.message` events, so it is never written twice, whatever retries or restarts
 * happen; user signals wait in `queue` until the kind delivers them into the transcript.
 */
export interface AgentState {
  phase: 'model' | 'tools' | 'waiting' | 'done'
  messages: Message[]
  queue: Queued[]
  /** Index of the current (or next) model call; keys the call's effect. */
  call: number
  /** Model calls in the current exchange (maxTurns). */
  turns: number
  /** Calls superseded by an interrupting user message, to cancel. */
  interrupted: number[]
  /** Tool calls of assistant message `toolsOf` and which of them are answered. */
  toolCalls: ToolCall[]
  toolsOf: number
  answered: string[]
  final: string
}

type Ctx = DecideContext<AgentDefinition>

const modelKey = (call: number) => `model:${call}`
const toolKey = (call: number, id: string) => `tool:${call}:${id}`

export interface AgentKindOptions {
  model?: ModelAdapter
  deltas?: DeltaSink
}

export function agentKind(options: AgentKindOptions) {
  const fallback = options.model ?? echoModel()
  return defineKind<AgentState, AgentDefinition>({
    initialState(ctx) {
      const text = renderInput(ctx.input)
      const queue = text === null ? [] : [{ seq: 0, text, interrupt: false }]
      const idle = queue.length === 0 && ctx.definition.conversational
      return {
        phase: idle ? 'waiting' : 'model',
        messages: [],
        queue,
        call: 1,
        turns: 0,
        interrupted: [],
        toolCalls: [],
        toolsOf: 0,
        answered: [],
        final: '',
      }
    },
    step,
    decide(state, ctx) {
      switch (state.phase) {
        case 'done':
          return [commands.complete({ text: state.final })]
        case 'waiting':
          if (state.queue.length > 0) return deliver(state, null)
          return [idleWait(state, ctx)]
        case 'tools':
          return toolCommands(state, ctx)
        case 'model':
          return modelCommands(state, ctx, ctx.definition.model ?? fallback, options.deltas)
      }
    },
  })
}

function step(
  state: AgentState,
  event: EventEnvelope,
  ctx: KindContext<AgentDefinition>,
): AgentState {
  const p = event.payload as Record<string, any>
  if (event.type === 'agent.user.message') {
    if (state.phase === 'done' || typeof p?.text !== 'string') return state
    const queued = { seq: event.seq, text: p.text, interrupt: p.mode === 'interrupt' }
    return { ...state, queue: [...state.queue, queued] }
  }
  // Only the kind writes transcript lines; a signal posing as one is ignored.
  if (event.type !== 'agent.message' || event.threadId !== ctx.threadId) return state
  if (event.origin === 'external') return state
  if (p.role === 'user') {
    const next: AgentState = {
      ...state,
      queue: state.queue.filter((q) => q.seq !== p.source),
      messages: [...state.messages, { role: 'user', content: p.content }],
    }
    if (state.phase === 'waiting') return { ...next, phase: 'model', turns: 0 }
    // The call in flight answers a transcript without this message: supersede it.
    if (p.supersedes === state.call) {
      return { ...next, interrupted: [...state.interrupted, state.call], call: state.call + 1 }
    }
    return next
  }
  if (p.role === 'assistant') {
    if (p.call !== state.call || state.phase !== 'model') return state
    const toolCalls = (p.toolCalls ?? []) as ToolCall[]
    const message: Message = { role: 'assistant', content: p.content }
    if (toolCalls.length > 0) message.toolCalls = toolCalls
    const next: AgentState = {
      ...state,
      messages: [...state.messages, message],
      call: state.call + 1,
      turns: state.turns + 1,
      interrupted: [],
    }
    if (toolCalls.length > 0) {
      return { ...next, phase: 'tools', toolCalls, toolsOf: state.call, answered: [] }
    }
    const phase: AgentState['phase'] =
      state.queue.length > 0 ? 'model' : ctx.definition.conversational ? 'waiting' : 'done'
    return { ...next, phase, final: p.content }
  }
  if (p.role === 'tool') {
    if (state.phase !== 'tools' || state.answered.includes(p.toolCallId)) return state
    const answered = [...state.answered, p.toolCallId]
    const messages: Message[] = [
      ...state.messages,
      { role: 'tool', content: p.content, toolCallId: p.toolCallId, name: p.name },
    ]
    const done = state.toolCalls.every((c) => answered.includes(c.id))
    return done
      ? { ...state, messages, answered: [], toolCalls: [], phase: 'model' }
      : { ...state, messages, answered }
  }
  return state
}

/** Moves queued user messages into the transcript, superseding the call `inFlight` if any. */
function deliver(state: AgentState, inFlight: number | null): Command[] {
  return state.queue.map((q) => {
    const payload: Record<string, Json> = { role: 'user', content: q.text, source: q.seq }
    if (inFlight !== null) payload.supersedes = inFlight
    return commands.emit('agent.message', payload, { key: `user:${q.seq}` })
  })
}

/** A conversational agent parks on the next user message (thread status `waiting`). */
function idleWait(state: AgentState, ctx: Ctx): Command {
  // Threadless signals reach the root thread only, so only the root may wait for them.
  const event =
    ctx.parentThreadId === null
      ? { type: 'agent.user.message' }
      : { type: 'agent.user.message', threadId: ctx.threadId }
  return commands.wait({ event }, { key: `idle:${state.call}` })
}

function modelCommands(
  state: AgentState,
  ctx: Ctx,
  adapter: ModelAdapter,
  sink: DeltaSink | undefined,
): Command[] {
  const def = ctx.definition
  const out: Command[] = state.interrupted.map((call) =>
    commands.cancel(modelKey(call), 'interrupted by a user message'),
  )
  const key = modelKey(state.call)
  const current = ctx.outcome(key)
  if (state.queue.length > 0) {
    if (current.status === 'none') return [...out, ...deliver(state, null)]
    if (current.status === 'pending' && state.queue.some((q) => q.interrupt)) {
      return [...out, ...deliver(state, state.call)]
    }
  }
  if (current.status === 'failed' || current.status === 'timed_out') {
    const cause = errorOf(current, 'model call')
    return [
      commands.fail({
        code: 'MODEL_FAILED',
        message: `agent ${def.name}: model call ${state.call} failed: ${cause.message}`,
        details: { call: state.call, error: cause as unknown as Json },
      }),
    ]
  }
  if (current.status === 'none' && state.turns >= def.maxTurns) {
    return [
      commands.fail({
        code: 'MAX_TURNS_EXCEEDED',
        message: `agent ${def.name} made ${state.turns} model calls without a final answer (maxTurns ${def.maxTurns})`,
        details: { maxTurns: def.maxTurns },
      }),
    ]
  }
  const instructions =
    typeof def.instructions === 'function' ? def.instructions(ctx.input) : def.instructions
  const tools = [...def.tools.values()].map(({ name, description, inputSchema }) => ({
    name,
    description,
    inputSchema,
  }))
  const effect = modelEffect({
    adapter,
    instructions,
    messages: state.messages,
    tools,
    call: state.call,
    ...(sink ? { sink } : {}),
  })
  const input = { agent: def.name, call: state.call, messages: state.messages.length }
  const options = {
    key,
    retry: def.modelRetry,
    ...(def.modelTimeoutMs !== undefined ? { timeoutMs: def.modelTimeoutMs } : {}),
  }
  out.push(commands.invoke(effect, input, options))
  return out
}

function toolCommands(state: AgentState, ctx: Ctx): Command[] {
  const out: Command[] = []
  const call = state.toolsOf
  for (const tc of state.toolCalls) {
    if (state.answered.includes(tc.id)) continue
    const answer = (content: Json, error?: ErrorInfo) =>
      commands.emit(
        'agent.message',
        {
          role: 'tool',
          toolCallId: tc.id,
          name: tc.name,
          content: typeof content === 'string' ? content : JSON.stringify(content),
          ...(error ? { isError: true } : {}),
        },
        { key: `result:${call}:${tc.id}` },
      )
    const fail = (error: ErrorInfo) => answer({ error: { ...error } } as Json, error)
    const tool = ctx.definition.tools.get(tc.name)
    if (!tool) {
      const names = [...ctx.definition.tools.keys()].join(', ') || 'none'
      out.push(fail({ code: 'UNKNOWN_TOOL', message: `no tool "${tc.name}"; tools: ${names}` }))
      continue
    }
    const key = toolKey(call, tc.id)
    const outcome = ctx.outcome(key)
    if (outcome.status === 'completed') {
      if (tool.definition) {
        out.push(answer(outcome.value))
        continue
      }
      const result = outcome.value as unknown as ToolOutcome
      out.push(result.ok ? answer(result.value) : fail(result.error))
      continue
    }
    if (outcome.status !== 'none' && outcome.status !== 'pending') {
      out.push(fail(errorOf(outcome, `tool ${tc.name}`)))
      continue
    }
    const called = { call, toolCallId: tc.id, name: tc.name, arguments: tc.arguments as Json }
    out.push(commands.emit('agent.tool.called', called, { key: `called:${call}:${tc.id}` }))
    if (tool.definition) {
      out.push(commands.spawn(tool.definition, tc.arguments ?? null, { key }))
    } else if (tool.tool) {
      const t = tool.tool
      const options = {
        key,
        ...(t.retry ? { retry: t.retry } : {}),
        ...(t.timeoutMs !== undefined ? { timeoutMs: t.timeoutMs } : {}),
      }
      out.push(commands.invoke(toolEffect(t, tc.id), tc.arguments ?? null, options))
    }
  }
  return out
}

function errorOf(outcome: Outcome, what: string): ErrorInfo {
  if (outcome.status === 'failed')
    return { code: outcome.error.code, message: outcome.error.message }
  if (outcome.status === 'timed_out') return { code: 'TIMED_OUT', message: `${what} timed out` }
  return { code: 'CANCELLED', message: `${what} was cancelled` }
}
