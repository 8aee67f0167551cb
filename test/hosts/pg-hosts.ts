// Helpers of the many-hosts proofs: host processes on one Postgres schema (pg-host-child.ts),
// the "external service" they call (a counter that holds each answer a while), and an SSE
// reader that resumes on another host when its host dies.
import { type ChildProcess, spawn } from 'node:child_process'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { type Child, servedHost } from '../support/children.js'

const root = join(import.meta.dirname, '..', '..')

export interface Host {
  name: string
  url: string
  child: ChildProcess
  alive: boolean
  exited: Promise<void>
  /** Everything the host printed on stdout so far. */
  output(): string
  /** The host as a child a wait depends on (test/support/children.ts): stdout and stderr. */
  watched: Child
}

/** Starts one host process; resolves once it serves (prints READY). */
export async function startHost(
  name: string,
  schema: string,
  callsUrl: string,
  engineOptions: Record<string, unknown> = {},
  env: Record<string, string> = {},
): Promise<Host> {
  const child = spawn(
    process.execPath,
    [
      '--conditions=skein-source',
      '--import',
      'tsx',
      join(root, 'test/hosts/pg-host-child.ts'),
      schema,
      callsUrl,
      name,
    ],
    {
      cwd: root,
      env: { ...process.env, PG_HOST_ENGINE_OPTIONS: JSON.stringify(engineOptions), ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  )
  const served = await servedHost(name, child, { verbose: !!process.env.PG_HOSTS_VERBOSE })
  const { url, exited, watched } = served
  const host: Host = { name, url, child, alive: true, exited, output: served.stdout, watched }
  exited.then(() => {
    host.alive = false
  })
  return host
}

/** Stops every host still alive (SIGTERM, then SIGKILL after a while). */
export async function stopHosts(hosts: readonly Host[]): Promise<void> {
  await Promise.all(
    hosts.map(async (h) => {
      if (!h.alive) return
      h.child.kill('SIGTERM')
      const done = await Promise.race([h.exited.then(() => true), sleep(10_000).then(() => false)])
      if (!done) {
        h.child.kill('SIGKILL')
        await h.exited
      }
    }),
  )
}

export interface Call {
  run: string
  step: string
  host: string
  attempt: number
  /** The answer reached the caller's socket (the call completed from its side). */
  answered: boolean
}

/** The external service: records each call, answers after `holdMs` (or `holdFor(call)`). */
export async function startCallCounter(holdMs: number, holdFor?: (call: Call) => number) {
  const calls: Call[] = []
  const server: Server = createServer((req, res) => {
    const q = new URL(req.url ?? '/', 'http://x').searchParams
    const call: Call = {
      run: q.get('run') ?? '',
      step: q.get('step') ?? '',
      host: q.get('host') ?? '',
      attempt: Number(q.get('attempt')),
      answered: false,
    }
    calls.push(call)
    setTimeout(() => {
      if (res.destroyed) return
      res.end('ok', () => {
        call.answered = !res.destroyed
      })
    }, holdFor?.(call) ?? holdMs)
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  return {
    url: `http://127.0.0.1:${port}`,
    calls,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      }),
  }
}

export interface SeenEvent {
  seq: number
  id: string
  type: string
}

/**
 * Follows one run's live events over SSE from `pick()`'s host; when the stream breaks (its
 * host died) it resumes from another with Last-Event-ID. Resolves with every event seen,
 * once the `end` frame arrives.
 */
export async function followRun(
  runId: string,
  pick: () => Host,
  onEvent: (event: SeenEvent) => void = () => {},
  deadlineMs = 120_000,
): Promise<{ events: SeenEvent[]; resumes: number; hosts: string[] }> {
  const events: SeenEvent[] = []
  const hosts: string[] = []
  let last = 0
  let resumes = -1
  const until = Date.now() + deadlineMs
  while (Date.now() < until) {
    const host = pick()
    resumes++
    hosts.push(host.name)
    try {
      // Bounded by the deadline even inside a stream that stays open and silent (keepalive
      // frames only): the read is aborted then, and the error below names what was seen.
      const res = await fetch(`${host.url}/runs/${runId}/events?live=true`, {
        headers: last > 0 ? { 'last-event-id': String(last) } : {},
        signal: AbortSignal.timeout(Math.max(1, until - Date.now())),
      })
      if (!res.ok || !res.body) {
        await sleep(100)
        continue
      }
      const decoder = new TextDecoder()
      let buffer = ''
      for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
        buffer += decoder.decode(chunk, { stream: true })
        let cut = buffer.indexOf('\n\n')
        while (cut >= 0) {
          const frame = buffer.slice(0, cut)
          buffer = buffer.slice(cut + 2)
          cut = buffer.indexOf('\n\n')
          let name = 'message'
          let data = ''
          for (const line of frame.split('\n')) {
            if (line.startsWith('event: ')) name = line.slice(7)
            else if (line.startsWith('data: ')) data = line.slice(6)
          }
          if (name === 'end') return { events, resumes, hosts }
          if (name !== 'message' || data === '') continue
          const envelope = JSON.parse(data) as SeenEvent
          const seen = { seq: envelope.seq, id: envelope.id, type: envelope.type }
          events.push(seen)
          last = Math.max(last, seen.seq)
          onEvent(seen)
        }
      }
    } catch {
      // The host went away mid-stream: resume elsewhere.
    }
    await sleep(100)
  }
  throw new Error(
    `run ${runId}: no end frame within ${deadlineMs} ms from ${hosts.join(', ')} (saw ${events.length}: ${events.map((e) => `${e.seq} ${e.type}`).join(', ')})`,
  )
}

/** POSTs JSON; retries on a refused connection or a 5xx (another host is picked each time). */
export async function postJson(
  pick: () => Host,
  path: string,
  body: unknown,
  attempts = 40,
): Promise<{ status: number; body: any }> {
  let lastError: unknown
  for (let i = 0; i < attempts; i++) {
    const host = pick()
    try {
      const res = await fetch(`${host.url}${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body),
      })
      const json = await res.json().catch(() => null)
      if (res.status < 500) return { status: res.status, body: json }
      lastError = new Error(`${res.status} ${JSON.stringify(json)}`)
    } catch (error) {
      lastError = error
    }
    await sleep(100)
  }
  throw lastError
}
