import type { EventInput } from '../../core/module-api.js'

/**
 * The signal carrying a user's message to an agent. By default it queues: the agent reads it
 * at its next model call. `interrupt: true` aborts a model call in flight and restarts it with
 * the message (a call already answered, or tools already running, are not undone).
 * Without `threadId` it goes to the run's root thread.
 *
 * @example
 * await engine.signal(runId, [userMessage('Actually, make it blue', { interrupt: true })])
 */
export function userMessage(
  text: string,
  options: { threadId?: string; interrupt?: boolean } = {},
): EventInput {
  if (typeof text !== 'string') throw new TypeError('userMessage needs a string')
  const event: EventInput = {
    type: 'agent.user.message',
    payload: { text, mode: options.interrupt ? 'interrupt' : 'queue' },
  }
  if (options.threadId !== undefined) event.threadId = options.threadId
  return event
}
