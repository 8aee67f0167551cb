// Which effect inputs get fresh wait URLs: `hasWaitUrl` is asked before every attempt, so it
// loops without allocating (decisions.md, "A decide allocates only what it returns"); these
// pin what it answers.
import { describe, expect, it } from 'vitest'
import { waitUrl } from '../../src/core/wait-url.js'
import { hasWaitUrl } from '../../src/runtime/wait-urls.js'

describe('hasWaitUrl', () => {
  it('finds a placeholder at the top, in objects and in arrays, a few levels deep', () => {
    expect(hasWaitUrl(waitUrl('approve'))).toBe(true)
    expect(hasWaitUrl({ to: 'a@b.c', link: waitUrl('approve') })).toBe(true)
    expect(hasWaitUrl([1, 'x', { links: [waitUrl('approve')] }])).toBe(true)
    expect(hasWaitUrl({ a: { b: { c: { d: waitUrl('k') } } } })).toBe(true)
  })

  it('says no for plain values, too deep a placeholder, and inherited keys', () => {
    expect(hasWaitUrl(null)).toBe(false)
    expect(hasWaitUrl('text')).toBe(false)
    expect(hasWaitUrl({ i: 1, list: [1, 2, { x: null }] })).toBe(false)
    expect(hasWaitUrl({ a: { b: { c: { d: { e: { f: waitUrl('k') } } } } } })).toBe(false)
    const inherited = Object.create({ link: waitUrl('k') })
    expect(hasWaitUrl(inherited)).toBe(false)
  })

  it('treats an object with more keys than the placeholder as an ordinary object', () => {
    const placeholder = waitUrl('k') as Record<string, unknown>
    expect(hasWaitUrl({ ...placeholder, extra: 1 })).toBe(false)
  })
})
