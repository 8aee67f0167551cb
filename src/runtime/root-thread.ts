import type { Definition } from '../core/definition.js'
import type { Json } from '../core/json.js'
import { RT } from '../core/runtime-events.js'
import type { Batch } from './batch.js'
import type { EngineContext } from './context.js'

/** The root thread's start: at a run's start, or when flow control admits a queued run. */
export function addRootThread(
  ctx: EngineContext,
  batch: Batch,
  definition: Definition,
  threadId: string,
  input: Json,
): void {
  batch.add(
    RT.threadStarted,
    ctx.fingerprints.stamp(definition, {
      threadId,
      parentThreadId: null,
      kind: definition.kind,
      definitionName: definition.name,
      definitionVersion: definition.version,
      input,
    }),
    { threadId },
  )
}
