// `skein/agent`: agents (a model in a loop with tools), model adapters, conversation projections.

export type { ToolOutcome } from './agent-effects.js'
export type { AgentState } from './agent-kind.js'
export { agent } from './agent-module.js'
export type { AiSdkModelOptions } from './ai-sdk-model.js'
export { aiSdkModel } from './ai-sdk-model.js'
export type { AgentDefinition, AgentOutput, AgentTool, AgentToolInput } from './define-agent.js'
export { defineAgent } from './define-agent.js'
export type { ToolContext, ToolDefinition } from './define-tool.js'
export { defineTool } from './define-tool.js'
export type { DeltaChannel } from './delta-channel.js'
export { deltaChannel } from './delta-channel.js'
export type { ScriptedModel, ScriptStep } from './echo-model.js'
export { echoModel, scriptedModel } from './echo-model.js'
export type { ConversationLine, TokenUsage } from './projections.js'
export { conversation, tokenUsage } from './projections.js'
export type {
  AgentDelta,
  DeltaSink,
  Message,
  ModelAdapter,
  ModelRequest,
  ModelResponse,
  ModelUsage,
  ToolCall,
  ToolSpec,
} from './types.js'
export { userMessage } from './user-message.js'
