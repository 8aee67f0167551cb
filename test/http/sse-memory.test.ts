import { type ChildProcess, spawn } from 'node:child_process'
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs'
import { type ClientRequest, get, type IncomingMessage } from 'node:http'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createEngineClient } from 'skein/client'
import { afterAll, afterEach, expect, it } from 'vitest'
import { described, ended, exitOf, within } from '../support/children.js'

// Live streams were bounded by frame count, not bytes. Six subscribers of a run
// with 600 events of 900 KB that never read raised the host's RSS by ~425 MB each, and /health
// went unanswered while one 450 MB catch-up page was built. Here the host runs in a child
// process (so its RSS is its own) on SQLite; subscribers connect over real sockets and stop
// reading. Real time is unavoidable (the host's drain deadline is a real timer), so the waits
// are generous and nothing asserts on a duration.

const HOST = join(import.meta.dirname, 'sse-memory-host.ts')
const EVENTS = 160
const EVENT_BYTES = 900_000
const STALLED = 6
const DRAIN_MS = 4000
/** The documented bound (docs/http.md, "Limits of live streams"). */
const BOUND_MB = 16
const MB = 1024 * 1024

const dir = mkdtempSync(join(tmpdir(), 'skein-sse-memory-'))
let child: ChildProcess | undefined
// A try's host ends with it, and each try's host writes a directory of its own (a retry must
// not find the first try's run, nor share the machine with its host).
afterEach(async () => {
  if (!child) return
  const exited = exitOf(child)
  child.kill('SIGKILL')
  await exited
  child = undefined
})
afterAll(() => rmSync(dir, { recursive: true, force: true }))
let tries = 0

function startHost(): Promise<{ url: string; tail: number; ask: (m: string) => Promise<any> }> {
  const hostDir = join(dir, `${++tries}`)
  mkdirSync(hostDir)
  const proc = spawn(
    process.execPath,
    [
      '--expose-gc',
      '--conditions=skein-source',
      '--import',
      'tsx',
      HOST,
      hostDir,
      String(EVENTS),
      String(EVENT_BYTES),
      String(DRAIN_MS),
    ],
    { stdio: ['ignore', 'pipe', 'pipe', 'ipc'] },
  )
  child = proc
  // Its output still shows, and is kept for a failure message.
  let output = ''
  proc.stdout?.on('data', (d) => {
    output += d
    process.stdout.write(d)
  })
  proc.stderr?.on('data', (d) => {
    output += d
    process.stderr.write(d)
  })
  const host = { name: 'the host', proc, output: () => output }
  const next = (what: string, withinMs = 30_000) =>
    within(
      what,
      new Promise<any>((resolve, reject) => {
        const gone = () => reject(new Error(`waiting for ${what}: ${described(host)}`))
        proc.once('message', resolve)
        // An exit that already happened never fires again.
        if (ended(proc)) gone()
        else proc.once('exit', gone)
      }),
      withinMs,
      () => described(host),
    )
  const ask = (message: string) => {
    const answer = next(`the host's answer to ${message}`)
    proc.send(message)
    return answer
  }
  return next('the host serving its run', 90_000).then(({ url, tail }) => ({ url, tail, ask }))
}

interface Stalled {
  request: ClientRequest
  response: IncomingMessage
}

/** A live subscriber that stops reading as soon as the headers arrive. */
function stalledSubscriber(url: string, lastEventId?: number): Promise<Stalled> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = { accept: 'text/event-stream' }
    if (lastEventId !== undefined) headers['last-event-id'] = String(lastEventId)
    const request = get(`${url}/runs/big/events`, { agent: false, headers }, (response) => {
      response.pause()
      resolve({ request, response })
    })
    request.on('error', reject)
  })
}

/** Reads what a stalled subscriber was sent until its connection closes; the ids of whole frames. */
function readToClose({ response }: Stalled): Promise<number[]> {
  return new Promise((resolve) => {
    let text = ''
    response.setEncoding('utf8')
    response.on('data', (chunk: string) => {
      text += chunk
    })
    response.on('error', () => {})
    response.once('close', () => {
      // A dropped stream can end mid-frame: only frames closed by their blank line count.
      const whole = text.split('\n\n').slice(0, -1)
      resolve(whole.flatMap((frame) => /^id: (\d+)$/m.exec(frame)?.[1] ?? []).map(Number))
    })
    response.resume()
  })
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))
const range = (from: number, to: number) =>
  Array.from({ length: to - from + 1 }, (_, i) => from + i)

it('bounds the memory of stalled subscribers, drops them, and leaves readers and /health alone', async () => {
  const { url, tail, ask } = await startHost()
  expect(tail).toBeGreaterThan(EVENTS)
  const { base } = await ask('mark')

  // Six subscribers that never read: each holds at most a page and its socket's buffer. What
  // they hold is measured once garbage is collected, well before their drain deadline.
  const stalled = await Promise.all(range(1, STALLED).map(() => stalledSubscriber(url)))
  await sleep(DRAIN_MS / 4)
  const { held } = await ask('held')
  // Past the deadline (with room for a loaded machine), each has been dropped.
  await sleep(DRAIN_MS * 2)
  const { peak } = await ask('peak')
  const heldPerConnMb = (held - base) / STALLED / MB
  const peakPerConnMb = (peak - base) / STALLED / MB
  // A dropped stream's connection ends once its queued bytes are read; one still open would
  // stream on instead and never close (the test would time out).
  let closed = 0
  const received = await within(
    'the stalled subscribers dropped',
    Promise.all(stalled.map((s) => readToClose(s).finally(() => closed++))),
    60_000,
    () => `${closed}/${STALLED} closed`,
  )
  for (const ids of received) expect(ids).toEqual(range(1, ids.length))

  // It resumes with Last-Event-ID and loses nothing.
  const first = received[0]
  const resumed: number[] = []
  const client = createEngineClient({ baseUrl: url })
  const resuming = new Promise<void>((resolve) => {
    const stop = client.subscribeEvents(
      'big',
      (event) => {
        resumed.push(event.seq)
        if (event.seq === tail) {
          stop()
          resolve()
        }
      },
      { fromSeq: (first.at(-1) ?? 0) + 1 },
    )
  })
  await within('the resumed stream to reach the tail', resuming, 60_000, () =>
    JSON.stringify({ tail, last: resumed.at(-1), resumed: resumed.length }),
  )
  expect([...first, ...resumed]).toEqual(range(1, tail))

  // While six more stall, a subscriber that reads gets every event, and /health answers.
  const more = await Promise.all(range(1, STALLED).map(() => stalledSubscriber(url)))
  const errors: string[] = []
  let delivered = 0
  let reading = true
  const reader = new Promise<void>((resolve) => {
    const stop = client.subscribeEvents(
      'big',
      (event) => {
        expect(event.seq).toBe(++delivered)
        if (event.seq === tail) {
          stop()
          resolve()
        }
      },
      { onError: (error) => errors.push(error.code) },
    )
  })
  const health: number[] = []
  let healthMaxMs = 0
  const probe = (async () => {
    while (reading) {
      const sent = performance.now()
      health.push((await fetch(`${url}/health`)).status)
      healthMaxMs = Math.max(healthMaxMs, performance.now() - sent)
      await sleep(50)
    }
  })()
  await within('the reading subscriber to reach the tail', reader, 60_000, () =>
    JSON.stringify({ tail, delivered, errors }),
  ).finally(() => {
    reading = false
  })
  await probe
  expect(delivered).toBe(tail)
  expect(errors).toEqual([])
  expect(health.length).toBeGreaterThan(0)
  expect(health.every((status) => status === 200)).toBe(true)
  for (const { request } of more) request.destroy()

  console.log(
    `SCORE sse-memory connections=${STALLED} event_bytes=${EVENT_BYTES} events=${tail} rss_growth_per_conn_mb=${heldPerConnMb.toFixed(1)} peak_before_gc_per_conn_mb=${peakPerConnMb.toFixed(1)} bound_mb=${BOUND_MB} closed_stalled=${received.length}/${STALLED} reader_events=${delivered} health_ok=${health.length}/${health.length} health_max_ms=${Math.round(healthMaxMs)}`,
  )
  expect(heldPerConnMb).toBeLessThan(BOUND_MB)
  await ask('stop').catch(() => {})
}, 180_000)
