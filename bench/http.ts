import { spawn } from 'node:child_process'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { pathToFileURL } from 'node:url'
import { createEngine, type Engine } from 'skein'
import { approval } from 'skein/approval'
import { defineWorkflow, workflow } from 'skein/workflow'
import { median, type Row } from './table.js'

const DURATION_MS = 1500
const ROUNDS = 3
const CONNECTIONS = 32
const SUBSCRIBERS = 200
const EVENTS = 1000
/** Signals per second during the fan-out run (200 × 200 = 40k frames/s). */
const EVENTS_PER_SECOND = 200

const gated = defineWorkflow({
  name: 'bench-gated',
  nodes: {
    prepare: { run: () => ({ ready: true }) },
    review: { after: ['prepare'], run: (ctx) => ctx.gate({ title: 'Go?' }) },
  },
})

/**
 * A keep-alive load generator in a child process, so it does not share the server's event
 * loop: CONNECTIONS requests in flight for DURATION_MS; prints completed 200s.
 */
const LOADGEN = `
import { Agent, get } from 'node:http'
const [url, ms, conns] = process.argv.slice(1)
const agent = new Agent({ keepAlive: true, maxSockets: Number(conns) })
let ok = 0, bad = 0
const end = Date.now() + Number(ms)
const one = () => new Promise((resolve) => {
  get(url, { agent }, (res) => { res.resume(); res.on('end', () => { res.statusCode === 200 ? ok++ : bad++; resolve() }) })
    .on('error', () => { bad++; resolve() })
})
const worker = async () => { while (Date.now() < end) await one() }
const t0 = Date.now()
await Promise.all(Array.from({ length: Number(conns) }, worker))
console.log(JSON.stringify({ ok, bad, ms: Date.now() - t0 }))
agent.destroy()
`

export function load(url: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const child = spawn(
      process.execPath,
      ['--input-type=module', '-e', LOADGEN, url, String(DURATION_MS), String(CONNECTIONS)],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    )
    let out = ''
    child.stdout.on('data', (d) => (out += d))
    child.on('error', reject)
    child.on('exit', () => {
      const { ok, bad, ms } = JSON.parse(out)
      if (bad > 0) return reject(new Error(`load generator saw ${bad} failed requests`))
      resolve((ok / ms) * 1000)
    })
  })
}

/** The baseline: a bare node:http server answering the same JSON body (already built). */
async function bareServer(body: string) {
  const server = createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json; charset=utf-8' })
    res.end(body)
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  const { port } = server.address() as AddressInfo
  return { url: `http://127.0.0.1:${port}`, close: () => new Promise((r) => server.close(r)) }
}

/**
 * SUBSCRIBERS SSE connections in a child process (so parsing does not share the server's
 * event loop). Each event's payload carries its send time (performance.timeOrigin-based, one
 * machine clock); the child reports delivered frames and latency percentiles as JSON.
 */
const SUBSCRIBE = `
import { get } from 'node:http'
const [url, subs, events] = process.argv.slice(1).map((v, i) => (i === 0 ? v : Number(v)))
const now = () => performance.timeOrigin + performance.now()
const latencies = []
let connected = 0, delivered = 0, finished = 0
const responses = []
for (let i = 0; i < subs; i++) {
  get(url, (res) => {
    responses.push(res)
    res.setEncoding('utf8')
    let carry = '', mine = 0
    res.on('data', (chunk) => {
      const at = now()
      carry += chunk
      let cut
      while ((cut = carry.indexOf('\\n\\n')) !== -1) {
        const frame = carry.slice(0, cut)
        carry = carry.slice(cut + 2)
        if (frame.includes(': connected') && ++connected === subs) console.log('ready')
        const data = frame.split('\\n').find((l) => l.startsWith('data: '))
        if (!data) continue
        latencies.push(at - JSON.parse(data.slice(6)).payload.t)
        delivered++
        if (++mine === events && ++finished === subs) {
          latencies.sort((a, b) => a - b)
          const p = (q) => latencies[Math.min(latencies.length - 1, Math.ceil(q * latencies.length) - 1)]
          console.log(JSON.stringify({ delivered, p50: p(0.5), p99: p(0.99), max: latencies[latencies.length - 1] }))
          for (const r of responses) r.destroy()
        }
      }
    })
  })
}
`

function subscribers(url: string): Promise<{ ready: Promise<void>; result: Promise<any> }> {
  return new Promise((resolve, reject) => {
    const child = spawn(
      process.execPath,
      ['--input-type=module', '-e', SUBSCRIBE, url, String(SUBSCRIBERS), String(EVENTS)],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    )
    let out = ''
    let readyResolve!: () => void
    const ready = new Promise<void>((r) => (readyResolve = r))
    let resultResolve!: (v: any) => void
    const result = new Promise((r) => (resultResolve = r))
    child.stdout.setEncoding('utf8')
    child.stdout.on('data', (d: string) => {
      out += d
      if (out.includes('ready\n')) readyResolve()
      const last = out.trim().split('\n').pop()!
      if (last.startsWith('{')) {
        resultResolve(JSON.parse(last))
        child.kill()
      }
    })
    child.on('error', reject)
    resolve({ ready, result })
  })
}

async function sseFanOut(engine: Engine, url: string, runId: string): Promise<Row[]> {
  const fromSeq = (await engine.getRun(runId)).lastSeq + 1
  const subs = await subscribers(`${url}/runs/${runId}/events?live=true&fromSeq=${fromSeq}`)
  await subs.ready
  const t0 = performance.now()
  // Paced at EVENTS_PER_SECOND: latency is measured under a steady rate, not a backlog.
  for (let n = 0; n < EVENTS; n++) {
    const due = t0 + (n * 1000) / EVENTS_PER_SECOND
    const wait = due - performance.now()
    if (wait > 0) await new Promise((r) => setTimeout(r, wait))
    const t = performance.timeOrigin + performance.now()
    await engine.signal(runId, [{ type: 'bench.tick', payload: { n, t } }])
  }
  const result = await Promise.race([
    subs.result,
    new Promise<null>((r) => setTimeout(() => r(null), 60_000).unref()),
  ])
  const delivered = result?.delivered ?? 0
  return [
    {
      name: `SSE: ${SUBSCRIBERS} subscribers × ${EVENTS} events (${EVENTS_PER_SECOND}/s) delivered`,
      value: delivered,
      unit: 'frames',
      baseline: SUBSCRIBERS * EVENTS,
      ratio: Number((delivered / (SUBSCRIBERS * EVENTS)).toFixed(3)),
      target: 1,
    },
    {
      name: 'SSE: delivery latency p99 (signal → subscriber)',
      value: Number((result?.p99 ?? Number.NaN).toFixed(1)),
      unit: 'ms',
      target: 50,
    },
    {
      name: 'SSE: delivery latency p50',
      value: Number((result?.p50 ?? Number.NaN).toFixed(1)),
      unit: 'ms',
    },
  ]
}

/**
 * `GET /runs/:id` through `engine.serve` against a bare node:http JSON server in the same run,
 * then 200 SSE subscribers of one run receiving 1,000 signals.
 */
export async function benchHttp(): Promise<Row[]> {
  const engine = createEngine({ modules: [workflow({ definitions: [gated] }), approval()] })
  const server = await engine.serve({ port: 0 })
  try {
    const { runId } = await engine.start(gated, {})
    const body = JSON.stringify({ runId, state: await engine.getRun(runId) })
    const bare = await bareServer(body)
    await load(`${bare.url}/`) // warm-up both sides once
    await load(`${server.url}/runs/${runId}`)
    // Interleaved rounds, medians: a shared machine's noise hits both sides alike.
    const ours: number[] = []
    const bares: number[] = []
    for (let round = 0; round < ROUNDS; round++) {
      bares.push(await load(`${bare.url}/`))
      ours.push(await load(`${server.url}/runs/${runId}`))
    }
    const baseline = median(bares)
    const value = median(ours)
    await bare.close()
    const rows: Row[] = [
      {
        name: `GET /runs/:id via serve (${CONNECTIONS} keep-alive conns) vs bare node:http`,
        value: Math.round(value),
        unit: 'req/s',
        baseline: Math.round(baseline),
        ratio: Number((value / baseline).toFixed(2)),
        target: 0.6,
      },
    ]
    rows.push(...(await sseFanOut(engine, server.url, runId)))
    return rows
  } finally {
    await engine.stop()
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  console.table(await benchHttp())
}
