import { ROUTES } from '../../src/http/routes/index.js'
import { samplesOf } from './route-samples.js'

export interface BadRequest {
  name: string
  method: string
  path: string
  headers?: Record<string, string>
  body?: string | Uint8Array
}

const JSON_CT = { 'content-type': 'application/json' }
const nest = (depth: number) => '['.repeat(depth) + ']'.repeat(depth)
const nestObj = (depth: number) => '{"a":'.repeat(depth) + '1' + '}'.repeat(depth)

/** Bodies that must be refused on every JSON route, whatever the route expects. */
const BAD_BODIES: Array<[string, string | Uint8Array, Record<string, string>?]> = [
  ['empty body', ''],
  ['whitespace body', '   \n'],
  ['truncated object', '{"events": ['],
  ['trailing comma', '{"a":1,}'],
  ['single quotes', "{'a':1}"],
  ['NaN literal', '{"a":NaN}'],
  ['comment', '{"a":1 /* x */}'],
  ['two documents', '{}{}'],
  ['bare string', '"hello"'],
  ['bare number', '42'],
  ['null', 'null'],
  ['array', '[]'],
  ['true', 'true'],
  ['deep arrays 65', nest(65)],
  ['deep objects 65', nestObj(65)],
  ['deep arrays 100k', nest(100_000)],
  ['__proto__ at top', '{"__proto__":{"polluted":true},"events":[{"type":"x"}]}'],
  ['constructor at top', '{"constructor":{"prototype":{"x":1}}}'],
  [
    '__proto__ nested in payload',
    '{"events":[{"type":"x","payload":{"a":{"__proto__":{"p":1}}}}]}',
  ],
  [
    'constructor nested in input',
    '{"kind":"test","definitionName":"echo","input":{"constructor":1}}',
  ],
  ['prototype key', '{"events":[{"type":"x","payload":{"prototype":1}}]}'],
  ['invalid utf-8', new Uint8Array([0x7b, 0x22, 0xff, 0xfe, 0x22, 0x3a, 0x31, 0x7d])],
  ['lone surrogate bytes', new Uint8Array([0x7b, 0x22, 0xed, 0xa0, 0x80, 0x22, 0x3a, 0x31, 0x7d])],
  ['over 1 MiB', `{"pad":"${'x'.repeat(1024 * 1024)}"}`],
  ['text/plain', '{"events":[{"type":"x"}]}', { 'content-type': 'text/plain' }],
  ['no content-type', '{"events":[{"type":"x"}]}', {}],
  [
    'latin1 charset',
    '{"events":[{"type":"x"}]}',
    { 'content-type': 'application/json; charset=latin1' },
  ],
  ['form content-type', 'events=x', { 'content-type': 'application/x-www-form-urlencoded' }],
  ['json-ish content-type', '{"events":[{"type":"x"}]}', { 'content-type': 'application/jsonx' }],
  [
    'lying content-length',
    '{}',
    { 'content-type': 'application/json', 'content-length': '99999999' },
  ],
]

/** Bodies that are JSON but wrong for one route. */
const WRONG_SHAPES: Record<string, unknown[]> = {
  'runs.start': [
    {},
    { kind: 'test' },
    { definitionName: 'echo' },
    { kind: 1, definitionName: 'echo' },
    { kind: 'test', definitionName: '' },
    { kind: 'test', definitionName: 'echo', runId: 5 },
    { kind: 'test', definitionName: 'echo', runId: '' },
    { kind: 'test', definitionName: 'echo', runId: 'x'.repeat(300) },
    { kind: 'test', definitionName: 'echo', runId: 'a\u0000b' },
    { kind: 'test', definitionName: 'echo', idempotencyKey: {} },
    { kind: 'test', definitionName: 'echo', definitionVersion: 2 },
    { kind: 'test', definitionName: 'echo', threadId: [] },
    { kind: 'test', definitionName: 'echo', extra: true },
    { kind: 'test', definitionName: 'echo', input: 'x'.repeat(600_000), pad: 1 },
    { kind: 'nope', definitionName: 'missing' },
  ],
  'runs.signal': [
    {},
    { events: [] },
    { events: {} },
    { events: 'x' },
    { events: [null] },
    { events: [1] },
    { events: [{}] },
    { events: [{ type: '' }] },
    { events: [{ type: 7 }] },
    { events: [{ type: 'x'.repeat(300) }] },
    { events: [{ type: 'x', threadId: 3 }] },
    { events: [{ type: 'x', extra: 1 }] },
    { events: [{ type: 'x' }], idempotencyKey: 12 },
    { events: [{ type: 'x' }], idempotencyKey: '' },
    { events: [{ type: 'x' }], other: 1 },
    { events: Array.from({ length: 1001 }, () => ({ type: 'x' })) },
  ],
  'effects.callback': [
    {},
    { attempt: 1 },
    { kind: 'complete' },
    { attempt: -1, kind: 'complete' },
    { attempt: 1.5, kind: 'complete' },
    { attempt: '1', kind: 'complete' },
    { attempt: 1, kind: 'exploded' },
    { attempt: 1, kind: 'fail', error: 5 },
    { attempt: 1, kind: 'fail', error: { code: 'X' } },
    { attempt: 1, kind: 'fail', error: { message: 'm', stack: 's' } },
    { attempt: 1, kind: 'fail', retryable: 'yes' },
    { attempt: 1, kind: 'complete', events: [{ type: 1 }] },
    { attempt: 1, kind: 'complete', events: 'x' },
    { attempt: 1, kind: 'complete', junk: true },
  ],
  'runs.fork': [
    {},
    { atSeq: 2, atNode: 'review' },
    { atSeq: '2' },
    { atSeq: 0 },
    { atSeq: 1.5 },
    { atSeq: 99_999 },
    { atNode: '' },
    { atNode: 7 },
    { atNode: 'no-such-node' },
    { atNode: 'review', runId: '' },
    { atNode: 'review', runId: 'r1' },
    { atNode: 'review', extra: true },
  ],
  'runs.cancel': [{ threadId: 5 }, { threadId: '' }, { threadId: 'ghost' }, { other: 1 }],
}

/** JSON routes that read no idempotency key (a key header is not theirs to refuse). */
const NO_IDEMPOTENCY_KEY = new Set(['effects.callback', 'runs.fork', 'runs.cancel'])

const BAD_QUERIES = [
  '-1',
  '1.5',
  'abc',
  '1e3',
  '',
  '0x10',
  '+1',
  ' 1',
  '99999999999999999999',
  'NaN',
  'Infinity',
  '1,2',
]

const BAD_PATHS = [
  '/runs/%2F',
  '/runs/a%2Fb',
  '/runs/a%5Cb',
  // Dot segments are resolved by the URL parser before routing (as in every server):
  // they land on a 404, never on another run's data.
  '/runs/r1/%2e%2e',
  '/runs/x/%2e%2e/events',
  '/runs/r1/../..%2F',
  '/runs/%2E%2E%2F',
  '/runs/%',
  '/runs/%zz',
  '/runs/%E0%A4%A',
  '/runs/%00',
  '/runs/a%0Ab/events',
  `/runs/${'x'.repeat(600)}`,
  '/runs//events',
  '/runs/r1/',
  '/runs/r1/events/extra',
  '/runs/r1/nothing',
  '/runs/r1/effects//retry',
  '/operations',
  '/operations/deadlines',
  '/operations/deadlines/rescan/now',
  '/health/deep',
  '/runs/ghost',
  '/runs/ghost/events',
  '/runs/ghost/threads',
  '/runs/ghost/status',
  '/runs/ghost/effects',
  '/runs/ghost/replay?seq=1',
  '/runs/ghost/projections/count',
  '/runs/r1/projections/unknown',
  '/runs/r1/projections/%2F',
]

export function badInputCorpus(): BadRequest[] {
  const out: BadRequest[] = []
  const samples = samplesOf(ROUTES)
  const jsonRoutes = samples.filter((s) => s.body !== undefined)
  for (const s of jsonRoutes) {
    for (const [name, body, headers] of BAD_BODIES) {
      out.push({
        name: `${s.label}: ${name}`,
        method: s.method,
        path: s.path,
        body,
        headers: headers ?? JSON_CT,
      })
    }
    for (const [i, shape] of (WRONG_SHAPES[s.route.name] ?? []).entries()) {
      out.push({
        name: `${s.label}: wrong shape #${i}`,
        method: s.method,
        path: s.path,
        body: JSON.stringify(shape),
        headers: JSON_CT,
      })
    }
    if (NO_IDEMPOTENCY_KEY.has(s.route.name)) continue
    out.push({
      name: `${s.label}: empty Idempotency-Key`,
      method: s.method,
      path: s.path,
      body: JSON.stringify(s.body),
      headers: { ...JSON_CT, 'idempotency-key': '' },
    })
    out.push({
      name: `${s.label}: long Idempotency-Key`,
      method: s.method,
      path: s.path,
      body: JSON.stringify(s.body),
      headers: { ...JSON_CT, 'idempotency-key': 'k'.repeat(400) },
    })
  }
  for (const q of BAD_QUERIES) {
    const v = encodeURIComponent(q)
    out.push({ name: `events fromSeq=${q}`, method: 'GET', path: `/runs/r1/events?fromSeq=${v}` })
    out.push({ name: `events limit=${q}`, method: 'GET', path: `/runs/r1/events?limit=${v}` })
    out.push({
      name: `live fromSeq=${q}`,
      method: 'GET',
      path: `/runs/r1/events?live=true&fromSeq=${v}`,
    })
    out.push({ name: `replay seq=${q}`, method: 'GET', path: `/runs/r1/replay?seq=${v}` })
    // Header values are whitespace-trimmed by the Fetch spec, so ' 1' is a valid '1' there.
    if (q.trim() === q && q !== '') {
      out.push({
        name: `Last-Event-ID ${q}`,
        method: 'GET',
        path: '/runs/r1/events',
        headers: { accept: 'text/event-stream', 'last-event-id': q },
      })
    }
  }
  out.push({ name: 'repeated fromSeq', method: 'GET', path: '/runs/r1/events?fromSeq=1&fromSeq=2' })
  out.push({ name: 'replay without seq', method: 'GET', path: '/runs/r1/replay' })
  out.push({ name: 'replay seq=0', method: 'GET', path: '/runs/r1/replay?seq=0' })
  out.push({ name: 'live=yes', method: 'GET', path: '/runs/r1/events?live=yes' })
  for (const path of BAD_PATHS) out.push({ name: `path ${path.slice(0, 40)}`, method: 'GET', path })
  for (const s of samples) {
    out.push({
      name: `${s.label}: wrong method`,
      // A method the route's path does not take (DELETE is a route's own method on /runs/:id).
      method: s.method === 'GET' ? 'PUT' : s.method === 'DELETE' ? 'PATCH' : 'DELETE',
      path: s.path,
    })
    if (s.path.includes('/r1')) {
      const ghost = s.path.replace('/r1', '/ghost')
      out.push({
        name: `${s.label}: unknown run`,
        method: s.method,
        path: ghost,
        body: s.body === undefined ? undefined : JSON.stringify(s.body),
        headers: s.body === undefined ? s.headers : { ...JSON_CT, ...s.headers },
      })
    }
  }
  out.push({ name: 'retry unknown effect', method: 'POST', path: '/runs/r1/effects/zzz/retry' })
  return out
}
