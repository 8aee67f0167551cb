import { type EventStore, type LeaseStore, memoryStore } from 'skein'
import { manualClock } from 'skein/testing'
import { describe, expect, it } from 'vitest'
import { claimDue } from '../../src/runtime/ownership/claimer.js'
import { enginesStoppedAfterEach } from '../support/engines.js'

// One claimer: the engine (due runs through the store's leases) and the actor host over shared
// cells (opening claimed cells) claim through `claimDue`, and an engine can be told not to claim.

const newEngine = enginesStoppedAfterEach()

describe('claimDue', () => {
  it('claims page after page until one comes back short, handing each run over in order', async () => {
    const due = Array.from({ length: 7 }, (_, i) => `r${i}`)
    const asked: number[] = []
    const handed: string[] = []
    const count = await claimDue(
      {
        claim: async (_now, limit) => {
          asked.push(limit)
          return due.splice(0, limit)
        },
        onClaimed: async (runId) => {
          handed.push(runId)
        },
        pageSize: () => 3,
        stopped: () => false,
      },
      manualClock(),
    )
    expect(asked).toEqual([3, 3, 3])
    expect(handed).toEqual(['r0', 'r1', 'r2', 'r3', 'r4', 'r5', 'r6'])
    expect(count).toBe(7)
  })

  it('stops when there is no room, and when its owner stops', async () => {
    let claims = 0
    const none = await claimDue(
      {
        claim: async () => {
          claims++
          return ['x']
        },
        onClaimed: () => {},
        pageSize: () => 0,
        stopped: () => false,
      },
      manualClock(),
    )
    expect([none, claims]).toEqual([0, 0])
    let stopped = false
    const handed: string[] = []
    await claimDue(
      {
        claim: async () => ['a', 'b', 'c'],
        onClaimed: (runId: string) => {
          handed.push(runId)
          stopped = runId === 'b'
        },
        pageSize: () => 3,
        stopped: () => stopped,
      },
      manualClock(),
    )
    expect(handed).toEqual(['a', 'b'])
  })
})

/** A memory store whose leases count `claimDue` calls. */
function countingStore(): EventStore & { claims: number } {
  const inner = memoryStore()
  const leases = inner.leases as LeaseStore
  const store = Object.assign(Object.create(inner), {
    claims: 0,
    leases: {
      ...leases,
      claimDue: (...args: Parameters<LeaseStore['claimDue']>) => {
        store.claims++
        return leases.claimDue(...args)
      },
    },
  })
  return store
}

/** Ten polls' worth of time, letting each round finish (and arm the next) in between. */
async function tenPolls(clock: ReturnType<typeof manualClock>) {
  for (let i = 0; i < 10; i++) {
    await clock.advance(100)
    await new Promise((resolve) => setImmediate(resolve))
  }
}

describe('an engine with ownership', () => {
  it('claims due runs every pollMs, and none with claimDue: false', async () => {
    const clock = manualClock()
    const claiming = countingStore()
    await newEngine({ store: claiming, clock, ownership: { pollMs: 100 } }).ready()
    await tenPolls(clock)
    expect(claiming.claims).toBe(10)

    const idle = countingStore()
    await newEngine({ store: idle, clock, ownership: { pollMs: 100, claimDue: false } }).ready()
    await tenPolls(clock)
    expect(idle.claims).toBe(0)
  })

  it('refuses a claimDue that is not a boolean', async () => {
    const engine = newEngine({ ownership: { claimDue: 'no' as never } })
    await expect(engine.ready()).rejects.toThrow(/ownership.claimDue must be a boolean/)
  })
})
