import { describe, expect, it } from 'vitest'
import { InvalidInputError, SkeinError, TerminalError, toErrorInfo } from '../../src/core/errors.js'
import { canonicalJson, checkJson, isSubset, jsonByteLength } from '../../src/core/json.js'
import { matchesWait } from '../../src/core/matching.js'
import { backoffAfter, backoffDelay, resolveRetry } from '../../src/core/retry.js'
import { timeOrderedUuid } from '../../src/core/uuid.js'
import { HTTP_STATUS_BY_CODE } from '../../src/http/wire/status.js'
import { defaultIds } from '../../src/runtime/system.js'

describe('backoff', () => {
  it('is capped exponential, attempts counting the first try', () => {
    const policy = resolveRetry({ maxAttempts: 6, backoffMs: 100, maxBackoffMs: 500 })
    expect([2, 3, 4, 5, 6, 7].map((n) => backoffDelay(policy, n))).toEqual([
      100,
      200,
      400,
      500,
      500,
      null,
    ])
    expect(backoffDelay(resolveRetry({ maxAttempts: 1 }), 2)).toBeNull()
    expect(resolveRetry(undefined).maxAttempts).toBe(3)
  })

  it('a retry loop doubles from initialMs after each failure, capped at maxMs', () => {
    const loop = { initialMs: 250, maxMs: 30_000 }
    expect([1, 2, 3, 4, 7, 8, 9].map((n) => backoffAfter(n, loop))).toEqual([
      250, 500, 1000, 2000, 16_000, 30_000, 30_000,
    ])
    // Before the first failure, and far past the cap, without overflowing to Infinity.
    expect(backoffAfter(0, loop)).toBe(250)
    expect(backoffAfter(10_000, loop)).toBe(30_000)
  })
})

describe('json', () => {
  it('accepts plain JSON, strips undefined properties, rejects the rest with a path', () => {
    expect(checkJson({ a: 1, b: undefined })).toMatchObject({ ok: true, value: { a: 1 } })
    const cases: unknown[] = [
      { d: new Date() },
      { n: Number.NaN },
      { f: () => 1 },
      [undefined],
      { b: 1n },
    ]
    for (const value of cases) expect(checkJson(value).ok).toBe(false)
    const cyclic: any = {}
    cyclic.self = cyclic
    expect(checkJson(cyclic)).toMatchObject({ ok: false, problem: { path: '$.self' } })
    let deep: unknown = 0
    for (let i = 0; i < 64; i++) deep = [deep]
    expect(checkJson(deep).ok).toBe(true)
    expect(checkJson([deep]).ok).toBe(false)
  })
  it('one check leaves nothing behind for the next: paths, depth and size start over', () => {
    const throwing = {
      get bad() {
        throw new Error('getter failed')
      },
    }
    expect(() => checkJson({ deep: [{ x: throwing }] })).toThrow('getter failed')
    expect(checkJson({ a: [1, { b: Number.NaN }] })).toMatchObject({
      ok: false,
      problem: { path: '$.a[1].b' },
    })
    expect(checkJson({ c: Number.NaN })).toMatchObject({ ok: false, problem: { path: '$.c' } })
    let deep: unknown = 0
    for (let i = 0; i < 64; i++) deep = [deep]
    expect(checkJson(deep).ok).toBe(true)
    const small = checkJson('x')
    expect(small.ok && small.maxBytes).toBeLessThan(40)
  })
  it('flat and nested values get the same verdicts and a size bound that covers the text', () => {
    const flat: unknown[] = [
      'ünï "q"\n',
      12.5,
      null,
      true,
      { a: 1, b: 'x', c: null },
      ['a', 2, false],
      Object.assign(Object.create(null), { k: 'v' }),
      {},
      [],
    ]
    for (const value of flat) {
      const checked = checkJson(value)
      expect(checked.ok).toBe(true)
      if (!checked.ok) continue
      expect(checked.value).toBe(value) // nothing to clean: the value itself, no copy
      expect(checked.maxBytes).toBeGreaterThanOrEqual(jsonByteLength(checked.value))
      // The same values one level down take the full walk: the verdict and bound agree.
      const nested = checkJson({ v: value })
      expect(nested.ok && nested.maxBytes).toBeGreaterThanOrEqual(
        jsonByteLength({ v: value } as any),
      )
    }
    for (const value of [
      Number.POSITIVE_INFINITY,
      { s: Symbol('x') },
      [1, () => 2],
      { u: undefined },
    ]) {
      const checked = checkJson(value)
      if (checked.ok)
        expect(checked.value).toEqual({}) // undefined properties are stripped
      else expect(checked.problem.path).toMatch(/^\$/)
    }
    expect(checkJson(new Map()).ok).toBe(false)
  })
  it('canonical JSON ignores key order; subset matching is recursive', () => {
    expect(canonicalJson({ b: 1, a: { d: 2, c: 3 } })).toBe(
      canonicalJson({ a: { c: 3, d: 2 }, b: 1 }),
    )
    expect(isSubset({ a: { b: 1 } }, { a: { b: 1, c: 2 }, d: 3 })).toBe(true)
    expect(isSubset({ a: { b: 2 } }, { a: { b: 1 } })).toBe(false)
    expect(isSubset({ a: [1] }, { a: [1, 2] })).toBe(false)
    expect(jsonByteLength({ s: 'é€😀' })).toBe(Buffer.byteLength(JSON.stringify({ s: 'é€😀' })))
  })
})

describe('wait matching', () => {
  const wait = (on: any, threadId = 't1') => ({
    waitId: 'w',
    threadId,
    key: 'k',
    on,
    status: 'open' as const,
  })
  const ev = (type: string, payload: any, extra: any = {}) =>
    ({
      id: 'e',
      runId: 'r',
      seq: 1,
      ts: 0,
      type,
      payload,
      threadId: null,
      origin: 'external',
      ...extra,
    }) as any
  it('matches by type and payload subset, honouring thread addressing', () => {
    const w = wait({ event: { type: 'x.paid', match: { id: 1 } } })
    expect(matchesWait(w, ev('x.paid', { id: 1, amount: 2 }))).toBe(true)
    expect(matchesWait(w, ev('x.paid', { id: 2 }))).toBe(false)
    expect(matchesWait(w, ev('x.other', { id: 1 }))).toBe(false)
    expect(matchesWait(w, ev('x.paid', { id: 1 }, { threadId: 't2' }))).toBe(false)
    expect(matchesWait(w, ev('x.paid', { id: 1 }, { threadId: 't1' }))).toBe(true)
    expect(matchesWait(w, ev('runtime.x', { id: 1 }))).toBe(false)
  })
})

describe('errors and ids', () => {
  it('errors carry stable codes, a realm-safe is(), and map to one status table', () => {
    const e = new InvalidInputError('bad', { field: 'x' })
    expect(e.code).toBe('INVALID_INPUT')
    expect(InvalidInputError.is(e)).toBe(true)
    expect(SkeinError.is({ ...e, [Symbol.for('skein.error')]: true })).toBe(true)
    expect(TerminalError.is(new TerminalError('no'))).toBe(true)
    expect(HTTP_STATUS_BY_CODE[e.code]).toBe(400)
    expect(toErrorInfo(new Error('boom'))).toEqual({ code: 'ERROR', message: 'boom' })
  })
  it('ids are unique across generators', () => {
    const a = defaultIds()
    const b = defaultIds()
    const seen = new Set<string>()
    for (let i = 0; i < 1000; i++) for (const g of [a, b]) seen.add(g.eventId())
    expect(seen.size).toBe(2000)
    expect(a.runId()).toMatch(/^run_[0-9a-f-]{36}$/)
  })
  it('run ids are RFC 9562 version-7 UUIDs: random, but sorted by creation time', () => {
    let ms = Date.UTC(2026, 10, 22)
    const ids = Array.from({ length: 200 }, (_, i) => timeOrderedUuid((ms += i % 3)))
    expect(new Set(ids).size).toBe(200)
    for (const id of ids)
      expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/)
    // Different milliseconds sort in creation order (the same millisecond only shares a prefix).
    const firstOfEachMs = ids.filter((_, i) => i % 3 === 0)
    expect([...firstOfEachMs].sort()).toEqual(firstOfEachMs)
    expect(ids[0].slice(0, 13).replace('-', '')).toBe(
      Date.UTC(2026, 10, 22).toString(16).padStart(12, '0'),
    )
    expect(defaultIds().runId().slice(4, 12)).toBe(timeOrderedUuid(Date.now()).slice(0, 8))
  })
})
