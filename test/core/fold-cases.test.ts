import { describe, expect, it } from 'vitest'
import { effectCases } from '../../src/core/fold/effects.js'
import { runCases } from '../../src/core/fold/run.js'
import { threadCases } from '../../src/core/fold/threads.js'
import { waitCases } from '../../src/core/fold/waits.js'
import { RT } from '../../src/core/runtime-events.js'

/** Runtime types the fold records nothing for beyond `lastSeq` (the runtime acts on them). */
const NOT_FOLDED: string[] = [RT.cancelRequested]

describe('the fold by event family', () => {
  it('folds every runtime event type in exactly one family file', () => {
    const families = { runCases, threadCases, waitCases, effectCases }
    const owners = new Map<string, string[]>()
    for (const [family, cases] of Object.entries(families)) {
      for (const type of Object.keys(cases)) owners.set(type, [...(owners.get(type) ?? []), family])
    }
    const twice = [...owners].filter(([, families]) => families.length > 1)
    expect(twice).toEqual([])
    const unowned = Object.values(RT).filter((t) => !owners.has(t) && !NOT_FOLDED.includes(t))
    expect(unowned).toEqual([])
    expect(NOT_FOLDED.filter((t) => owners.has(t))).toEqual([])
  })
})
