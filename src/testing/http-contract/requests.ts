import { describe, expect } from 'vitest'
import { type HostCase, read } from './host-world.js'
import { dumpRuns, type RouteSample, routeSamples, SAMPLE_LABELS, seedRuns } from './samples.js'

const requestOf = (sample: RouteSample, path: string): RequestInit & { path: string } => ({
  path,
  method: sample.method,
  headers: {
    ...sample.headers,
    ...(sample.body === undefined ? {} : { 'content-type': 'application/json' }),
  },
  ...(sample.body === undefined ? {} : { body: JSON.stringify(sample.body) }),
})

const MIB = 1024 * 1024
const nest = (depth: number) => '['.repeat(depth) + ']'.repeat(depth)

/**
 * Requests a host must refuse before anything is written: query parameters a route does not
 * take (ignoring them answers another question), and bodies outside the limits.
 */
export function requestCases(test: HostCase): void {
  describe('unknown query parameters', () => {
    for (const label of SAMPLE_LABELS) {
      test(`${label} refuses one with 400 INVALID_REQUEST and writes nothing`, async (w) => {
        // Worker and operations routes are open here so they reach the check too.
        await w.boot({ authorize: () => true })
        const sample = routeSamples(await seedRuns(w)).find((s) => s.label === label)!
        const before = await dumpRuns(w)
        const path = `${sample.path}${sample.path.includes('?') ? '&' : '?'}fromseq=1`
        const { path: _, ...init } = requestOf(sample, path)
        const res = await read((await w.request(path, init))!)
        expect(res.status).toBe(400)
        expect(res.body.error.code).toBe('INVALID_REQUEST')
        expect(res.body.error.message).toContain('fromseq')
        expect(res.body.error.details).toEqual({
          unknown: ['fromseq'],
          allowed: sample.route.query ?? [],
        })
        expect(await dumpRuns(w)).toBe(before)
      })
    }

    test('accepts the parameters a route declares, and names every unknown one once', async (w) => {
      await w.boot()
      await seedRuns(w)
      const events = await w.call('GET', '/runs/r1/events?fromSeq=2&limit=1')
      expect(events.status).toBe(200)
      expect(events.body.events.map((e: { seq: number }) => e.seq)).toEqual([2])
      expect((await w.call('GET', '/runs/r1/replay?seq=2')).status).toBe(200)
      const res = await w.call('GET', '/runs/r1?b=1&a=2&b=3&fromSeq=1')
      expect(res.status).toBe(400)
      expect(res.body.error.details).toEqual({
        unknown: ['b', 'a', 'fromSeq'],
        allowed: ['wait', 'timeoutMs'],
      })
    })
  })

  describe('body limits', () => {
    test('refuses bodies outside the limits with a proper 4xx, writing nothing', async (w) => {
      await w.boot()
      await seedRuns(w)
      const before = await dumpRuns(w)
      const json = { 'content-type': 'application/json' }
      const cases: Array<[string, number, string, BodyInit, Record<string, string>]> = [
        [
          'text/plain',
          415,
          'UNSUPPORTED_MEDIA_TYPE',
          '{"events":[{"type":"x"}]}',
          { 'content-type': 'text/plain' },
        ],
        ['no content-type', 415, 'UNSUPPORTED_MEDIA_TYPE', '{"events":[{"type":"x"}]}', {}],
        ['over 1 MiB', 413, 'PAYLOAD_TOO_LARGE', `{"pad":"${'x'.repeat(MIB)}"}`, json],
        ['nested 65 deep', 400, 'INVALID_REQUEST', `{"events":${nest(65)}}`, json],
        [
          '__proto__ key',
          400,
          'INVALID_REQUEST',
          '{"__proto__":{"p":1},"events":[{"type":"x"}]}',
          json,
        ],
        [
          'constructor in a payload',
          400,
          'INVALID_REQUEST',
          '{"events":[{"type":"x","payload":{"constructor":1}}]}',
          json,
        ],
        ['bad JSON', 400, 'INVALID_REQUEST', '{"events": [', json],
        [
          'an unknown field',
          400,
          'INVALID_REQUEST',
          '{"events":[{"type":"x"}],"extra":true}',
          json,
        ],
        [
          'a runtime event',
          400,
          'INVALID_EVENT',
          '{"events":[{"type":"runtime.run.completed"}]}',
          json,
        ],
      ]
      for (const [name, status, code, body, headers] of cases) {
        const res = await read(
          (await w.request('/runs/r1/events', { method: 'POST', body, headers }))!,
        )
        expect([res.status, res.body?.error?.code], name).toEqual([status, code])
        expect(Object.keys(res.body), name).toEqual(['error'])
        expect(res.text, name).not.toMatch(/\n\s+at |node_modules/)
      }
      const bigInput = await w.call('POST', '/runs', {
        kind: 'workflow',
        definitionName: 'release',
        input: { pad: 'x'.repeat(MIB) },
      })
      expect([bigInput.status, bigInput.body.error.code]).toEqual([413, 'PAYLOAD_TOO_LARGE'])
      expect(await dumpRuns(w)).toBe(before)
    })
  })
}
