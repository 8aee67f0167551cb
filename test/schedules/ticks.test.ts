import { Cron } from 'croner'
import { describe, expect, it } from 'vitest'
import type { ClaimStore } from '../../src/core/ports.js'
import { SCHEDULES_CLAIM, storeClaim } from '../../src/runtime/engine-schedules.js'
import { checkTimezone, Ticks } from '../../src/runtime/schedule-ticks.js'
import { memoryStore } from '../../src/stores/memory/memory-store.js'

const rule = (cron: string, timezone: string) => ({
  name: 's',
  cron,
  every: null,
  timezone,
  jitterMs: 0,
})

describe('tick times', () => {
  it('computes UTC ticks without Intl and gets the same ticks croner gives for the zone', () => {
    const ticks = new Ticks()
    const expressions = ['7 * * * * *', '0 9 * * 1-5', '*/15 * * * *', '0 0 29 2 *', '@daily']
    for (const zone of ['UTC', 'Etc/UTC']) {
      for (const expression of expressions) {
        const reference = new Cron(expression, { timezone: zone, paused: true })
        for (let i = 0; i < 300; i++) {
          const after = Date.UTC(2024, 0, 1) + i * 7_654_321_007
          const expected = reference.nextRun(new Date(after))?.getTime() ?? null
          expect(ticks.next(rule(expression, zone), after)).toBe(expected)
        }
      }
    }
  })

  it('knows a zone after the first check, and never takes an unknown one', () => {
    expect(checkTimezone('Europe/Berlin')).toBe(true)
    expect(checkTimezone('Europe/Berlin')).toBe(true)
    expect(checkTimezone('Mars/Olympus')).toBe(false)
    expect(checkTimezone('Mars/Olympus')).toBe(false)
    expect(checkTimezone('')).toBe(false)
  })
})

describe("the ticker's claim", () => {
  it('is written when a third of the lease has passed, not at every pass; lost when another holds it', async () => {
    const claims = memoryStore().claims as ClaimStore
    let writes = 0
    const counted: ClaimStore = {
      ...claims,
      claim: (...args) => {
        writes++
        return claims.claim(...args)
      },
    }
    const a = storeClaim(counted, 'A', 9000)
    for (const now of [0, 1000, 2000, 2999]) expect(await a.hold(now)).toBe(1)
    expect(writes).toBe(1)
    expect(await a.hold(3000)).toBe(1)
    expect(writes).toBe(2)
    expect((await claims.read(SCHEDULES_CLAIM))?.expiresAt).toBe(12_000)
    // Paused past its lease: B took it; A's next pass asks the store and learns it.
    expect(await storeClaim(claims, 'B', 9000).hold(13_000)).toBe(2)
    expect(await a.hold(14_000)).toBeNull()
  })
})
