// Restate 1.7's side of `npm run bench -- peers`: the workloads of bench/peers/harness.ts written
// the way Restate's TypeScript docs write them: a service whose handlers run each step with
// `ctx.run`, parallel steps started together and joined with `RestatePromise.all`, a sleep
// `ctx.sleep`, and a workflow waiting on a durable promise (`ctx.promise`) that a shared handler
// resolves. Every run is called through the server's HTTP ingress, as a client would. This process
// is the service endpoint and the client; it starts the server (the binary the
// @restatedev/restate-server package ships) on SKEIN_PEER_PATH with its default durability
// (its log is fsynced before a commit is acknowledged) and registers itself.
import './polyfill.js'
import { spawn } from 'node:child_process'
import { mkdirSync, openSync, readdirSync, statSync } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import * as restate from '@restatedev/restate-sdk'
import { Counter, Marks, type PeerSystem, runPeer } from '../harness.js'

const marks = new Marks()
const gated = new Counter()
const finished = new Counter()
const late: number[] = []
const mode = process.env.SKEIN_PEER_MODE ?? 'round'
const gateOpen = mode === 'recovered'
const [ingressPort, adminPort, nodePort, endpointPort] = (
  process.env.SKEIN_PEER_PORTS ?? '18080,19070,15122,19080'
)
  .split(',')
  .map(Number)
const dataDir = process.env.SKEIN_PEER_PATH ?? 'restate-data'
const ingress = `http://127.0.0.1:${ingressPort}`
const admin = `http://127.0.0.1:${adminPort}`

const step = async (i: number) => ({ i })
async function chainOf(ctx: restate.Context, n: number): Promise<number> {
  for (let i = 0; i < n; i++) await ctx.run(`s${i}`, () => step(i))
  return n
}

const bench = restate.service({
  name: 'Bench',
  handlers: {
    three: async (ctx: restate.Context) => chainOf(ctx, 3),
    ten: async (ctx: restate.Context) => chainOf(ctx, 10),
    fan: async (ctx: restate.Context) => {
      await ctx.run('first', () => step(0))
      await restate.RestatePromise.all(
        Array.from({ length: 16 }, (_, i) => ctx.run(`p${i}`, () => step(i))),
      )
      await ctx.run('join', () => step(17))
      return 18
    },
    nap: async (ctx: restate.Context) => {
      const from = await ctx.run('from', async () => Date.now())
      await ctx.sleep(1000)
      await ctx.run('late', async () => {
        late.push(Date.now() - from - 1000)
      })
    },
    stuck: async (ctx: restate.Context) => {
      await ctx.run('gate', async () => {
        gated.add()
        if (!gateOpen) await new Promise(() => {})
      })
      await ctx.run('done', async () => finished.add())
    },
  },
})

const signalled = restate.workflow({
  name: 'Signalled',
  handlers: {
    run: async (ctx: restate.WorkflowContext) => {
      await ctx.run('ready', async () => marks.hit(`ready-${ctx.key}`))
      await ctx.promise<string>('go')
      await ctx.run('after', async () => marks.hit(ctx.key))
    },
    go: async (ctx: restate.WorkflowSharedContext) => {
      await ctx.promise<string>('go').resolve('go')
    },
  },
})

async function call(path: string): Promise<void> {
  const res = await fetch(`${ingress}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: 'null',
  })
  if (!res.ok) throw new Error(`${path}: ${res.status} ${await res.text()}`)
  await res.arrayBuffer()
}

async function until(ok: () => Promise<boolean>, what: string, ms = 60_000): Promise<void> {
  const deadline = Date.now() + ms
  while (Date.now() < deadline) {
    if (await ok().catch(() => false)) return
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
  throw new Error(`timed out waiting for ${what}`)
}

function startServer(): number {
  const pkg = createRequire(import.meta.url).resolve(
    '@restatedev/restate-server-linux-x64/package.json',
  )
  mkdirSync(dataDir, { recursive: true })
  const log = openSync(join(dataDir, '..', `${mode}-server.log`), 'a')
  const child = spawn(
    join(dirname(pkg), 'bin', 'restate-server'),
    ['--no-logo', '--listen-mode', 'tcp', '--base-dir', dataDir, '--node-name', 'bench'],
    {
      stdio: ['ignore', log, log],
      env: {
        ...process.env,
        RESTATE_BIND_IP: '127.0.0.1',
        RESTATE_BIND_PORT: String(nodePort),
        RESTATE_INGRESS__BIND_PORT: String(ingressPort),
        RESTATE_ADMIN__BIND_PORT: String(adminPort),
        RESTATE_DISABLE_TELEMETRY: 'true',
        RESTATE_LOG_FILTER: 'warn',
      },
    },
  )
  child.unref()
  return child.pid!
}

const bytesUnder = (dir: string): number =>
  readdirSync(dir, { withFileTypes: true }).reduce((sum, entry) => {
    const path = join(dir, entry.name)
    return sum + (entry.isDirectory() ? bytesUnder(path) : statSync(path).size)
  }, 0)

async function make(): Promise<PeerSystem> {
  // The endpoint first: a restarted server resumes invocations against it at once.
  await restate.endpoint().bind(bench).bind(signalled).listen(endpointPort)
  const serverPid = startServer()
  await until(async () => (await fetch(`${admin}/health`)).ok, 'the admin API')
  if (mode !== 'recovered') {
    await until(async () => {
      const res = await fetch(`${admin}/deployments`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ uri: `http://127.0.0.1:${endpointPort}`, force: true }),
      })
      return res.ok
    }, 'the deployment to register')
  }
  await until(async () => (await fetch(`${ingress}/restate/health`)).ok, 'the ingress')
  const sendAll = async (n: number, path: string) => {
    for (let i = 0; i < n; i += 50) {
      await Promise.all(Array.from({ length: Math.min(50, n - i) }, () => call(path)))
    }
  }
  return {
    threeSteps: () => call('/Bench/three'),
    tenSteps: () => call('/Bench/ten'),
    fanOut: () => call('/Bench/fan'),
    async parkForSignal(key) {
      await call(`/Signalled/${key}/run/send`)
      await marks.wait(`ready-${key}`)
      return async () => {
        const ran = marks.wait(key)
        await call(`/Signalled/${key}/go`)
        await ran
      }
    },
    async sleepers(n) {
      await sendAll(n, '/Bench/nap/send')
      while (late.length < n) await new Promise((resolve) => setTimeout(resolve, 5))
      return late
    },
    async stuck(n) {
      await sendAll(n, '/Bench/stuck/send')
      await gated.reached(n)
    },
    recovered: (n) => finished.reached(n),
    storeBytes: async () => bytesUnder(dataDir),
    serverPids: async () => [serverPid],
    ownedPids: () => [serverPid],
    async close() {
      process.kill(serverPid, 'SIGTERM')
      await until(async () => {
        try {
          process.kill(serverPid, 0)
          return false
        } catch {
          return true // gone
        }
      }, 'the server to stop')
      process.exit(0)
    },
  }
}

await runPeer(make)
