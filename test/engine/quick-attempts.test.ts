import { describe, expect, it } from 'vitest'
import { newRunMemory } from '../../src/runtime/context.js'
import { awaitQuickAttempts } from '../../src/runtime/effect-runner.js'

const macrotask = () => new Promise<void>((resolve) => setImmediate(resolve))

describe('awaitQuickAttempts', () => {
  it('an earlier wait timing out never clears the waiter of a later one', async () => {
    const mem = newRunMemory()
    mem.inflight.set('e1', { effectId: 'e1', attempt: 1, abort: () => {} })
    const first = awaitQuickAttempts(mem)
    // The attempt settles at once: it wakes the first wait, whose timeout is still queued.
    mem.waiter?.()
    await first
    let seen: (() => void) | null | undefined
    setImmediate(() => {
      seen = mem.waiter
    })
    const second = awaitQuickAttempts(mem)
    const waiter = mem.waiter
    await macrotask()
    expect(seen).toBe(waiter)
    await second
    expect(mem.waiter).toBeNull()
  })
})
