import {
  DefinitionError,
  defineInput,
  defineModule,
  type Module,
  payload,
} from '../../core/module-api.js'
import { shape } from '../shared/shape.js'
import { agentKind } from './agent-kind.js'
import type { AgentDefinition } from './define-agent.js'
import { conversation, tokenUsage } from './projections.js'
import type { DeltaSink, ModelAdapter } from './types.js'

/** `user.message` is the agent's input (`userMessage`); the rest only its kind and effects write. */
const agentEvents = {
  'user.message': defineInput(
    shape<{ text: string; mode?: string }>(
      { text: 'string', mode: ['queue', 'interrupt'] },
      { closed: true },
    ),
  ),
  message: shape<{ role: string; content: string }>({ role: 'string', content: 'string' }),
  'tool.called': shape<{ toolCallId: string; name: string }>({
    toolCallId: 'string',
    name: 'string',
  }),
  delta: payload<{ text: string }>(),
}

/**
 * The agent module: kind `agent`, its events, and the `conversation` and `tokenUsage`
 * projections. `model` serves every agent without its own (default: a deterministic echo
 * model). Agents listed as another agent's tools are registered with it.
 *
 * @example
 * createEngine({ modules: [agent({ definitions: [support], model: aiSdkModel(openai('gpt-4o')) })] })
 */
export function agent(
  options: {
    definitions?: readonly AgentDefinition[]
    model?: ModelAdapter
    deltas?: DeltaSink
  } = {},
): Module {
  if (options.model !== undefined && typeof options.model?.generate !== 'function') {
    throw new DefinitionError('agent({ model }) must be a ModelAdapter with generate()')
  }
  return defineModule({
    namespace: 'agent',
    version: '1.0.0',
    events: agentEvents,
    kinds: { agent: agentKind({ model: options.model, deltas: options.deltas }) },
    projections: { conversation, tokenUsage },
    definitions: withToolAgents(options.definitions ?? []),
  })
}

/** The definitions plus agents reachable through `tools`, each once. */
function withToolAgents(definitions: readonly AgentDefinition[]): AgentDefinition[] {
  const out: AgentDefinition[] = []
  const seen = new Set<string>()
  const visit = (d: AgentDefinition) => {
    const label = `${d.name}@${d.version}`
    if (seen.has(label)) return
    seen.add(label)
    out.push(d)
    for (const tool of d.tools.values())
      if (tool.definition?.kind === 'agent') visit(tool.definition as AgentDefinition)
  }
  for (const d of definitions) visit(d)
  return out
}
